"""Pictures of where tensors' elements live: each tensor's elements as a grid of its shape, the storage as a
strip of cells, and one row per tensor below it.

``layout_picture`` plans a picture as data, from the model layer only (``layout``, ``same_storage``,
``compare_reads``, ``storage_values_text``): each tensor's grid (element ``t[i, j]`` naming the storage index it
reads), the cells shown, the elements reading each, one step along each dimension and a one-line summary.
``layout_scene`` places it as a ``Scene``, which ``draw_layout`` renders with matplotlib and ``picture_svg`` as
SVG. matplotlib is imported only when a picture is drawn.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass, replace

import numpy as np
import torch

from ..common.checks import require_bool, require_int, require_tensor, require_type
from ..common.text import dtype_name, plural, tuple_text
from ..facts.storage import (
    Layout,
    compare_reads,
    layout,
    same_storage,
    shares_memory,
    storage_values_text,
    unravel_index,
)
from . import palette
from .render_mpl import render, require_axes, with_summary
from .render_svg import svg
from .scene import Arrow, Line, Rect, Scene, Style, Text, text_width, visible

MAX_LISTED = 16_384  # elements (row-major) ``layout`` lists per tensor: cells read only by others are drawn "?"
TAIL_LISTED = 1_024  # a longer tensor's last elements looked up too, so its region's end is exact
MIN_CELLS = 8  # the fewest cells max_cells may ask for: a start, an end and an elision
MAX_CELLS = 512  # larger max_cells are capped here (the summary says so): each cell costs time and 0.34 inch
GAP_UNITS = 4  # width of a "… N cells not shown …" marker, in cells
MAX_WINDOWS = 4  # windows around the tensors' ends onto one big storage (each row's start always gets one)
WINDOWED_SHARE = 2  # a storage too long to draw whole: its windows and gap markers take 1/2 of max_cells' width
GRID_ROWS = 6  # a grid block draws at most this many rows (the first ones, "⋮", the last) ...
GRID_COLUMNS = 8  # ... and columns (the first ones, "…", the last; twice as many for 1-D)
NESTED_CAP = 4  # rows and columns of each block above 2-D
GRID_BLOCKS = 4  # blocks across for the next-to-last leading dimension (more dims: lines of blocks) ...
GRID_LINES = 3  # ... and lines of blocks down
GHOST_CELLS = 8  # cells just past a storage's end drawn for a setting that runs past it
LAZY_BITS = (  # what a lazy bit does to the values a view reads, its name, and the test for it
    ("conjugated", "conj", torch.Tensor.is_conj),
    ("negated", "neg", torch.Tensor.is_neg),
)


@dataclass(frozen=True)
class PictureCell:
    """One drawn cell: a storage cell (``row == "storage"``, ``state == "value"``) or one slot of a tensor's row.

    ``index`` counts in the row's own dtype; ``byte_start``/``nbytes`` place it in bytes. ``state`` is ``"read"``,
    ``"unread"``, ``"unknown"`` (no listed element reads it, unlisted ones may), ``"ghost"`` (past the storage's
    end: a setting torch refuses) or ``"value"`` (a cell of a storage strip, or of the narrower strip
    ``"storage as <dtype>"`` that reads the same bytes as a row's other dtype); ``positions`` are the row-major
    positions of the listed elements reading it, and ``count_exact`` is False when unlisted ones may read it too.
    ``text`` is one thing per kind of row: a storage cell's value; in a tensor's row the index of the element
    reading the cell (``[1,0]``), or ``×n`` when n elements read it.
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
    heading: str = ""  # the title drawn: short, parts joined by " · " (the description when there is one storage)
    # A copy's storage (``layout_picture(copied=...)``): the row it holds values of, and ``(storage index, that
    # row's storage index whose value the cell holds)`` per drawn cell, written in a row "from <row>" under it.
    source_row: str = ""
    sources: tuple[tuple[int, int], ...] = ()

    def hidden_cells(self) -> int:
        """How many storage cells the gap markers stand for."""
        return sum((stop - start) // self.itemsize for kind, start, stop in self.pieces if kind == "gap")


@dataclass(frozen=True)
class GridElement:
    """One drawn element of a grid: ``t[index]`` at row-major ``position`` reads storage index ``storage_index``
    (in the row's dtype); ``past_end`` when that cell lies past the storage's end (a ghost); ``source``: for a
    copy, the storage index of the cell whose value it holds (see ``layout_picture(copied=...)``; drawn once, under
    the copy's storage strip, not in the grid, whose numbers are storage indices only)."""

    block: int
    row: int
    column: int
    index: tuple[int, ...]
    position: int
    storage_index: int
    past_end: bool
    source: int | None = None


@dataclass(frozen=True)
class GridBlock:
    """One 2-D block of a grid: ``lead`` are its leading indices (``()`` up to 2-D); ``line``/``place`` put it
    in the grid of blocks; ``rows``/``columns`` are the indices drawn, ``None`` where "…" stands for the rest."""

    lead: tuple[int, ...]
    line: int
    place: int
    rows: tuple[int | None, ...]
    columns: tuple[int | None, ...]


@dataclass(frozen=True)
class PictureGrid:
    """A tensor's elements laid out in its shape (nested blocks above 2-D), each naming the storage index it reads.

    ``blocks`` lead with ``None`` entries stand for elided blocks ("…"); ``cut`` says in words what a capped grid
    leaves out ('' when every element is drawn).
    """

    strip: int
    row: str
    shape: tuple[int, ...]
    blocks: tuple[GridBlock, ...]
    elements: tuple[GridElement, ...]
    cut: str
    source_row: str = ""  # the row whose cells hold a copy's values ('' when not given)

    def element(self, *index: int) -> GridElement | None:
        """The drawn element ``t[index]``, or None when the grid leaves it out."""
        return next((e for e in self.elements if e.index == tuple(index)), None)


@dataclass(frozen=True)
class LayoutPicture:
    """Everything a layout picture shows, as data (see ``layout_picture``)."""

    strips: tuple[PictureStrip, ...]
    rows: tuple[PictureRow, ...]
    cells: tuple[PictureCell, ...]
    steps: tuple[PictureStep, ...]
    summary: str
    notes: tuple[str, ...]  # the legend: what each number, count, ? and border means here
    grids: tuple[PictureGrid, ...] = ()

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
    require_type(names, (list, tuple), "names", "a list of str (one per tensor)")
    if len(names) != count:
        raise ValueError(f"names must have one entry per tensor: {count} tensors, {len(names)} names")
    for i, name in enumerate(names):
        require_type(name, str, f"names[{i}]", "a str")
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
    require_type(t, torch.Tensor, f"tensors[{i}]", "a torch.Tensor or a Layout")
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
    strips: list[list[_Member]] = []
    for member in map(_member, tensors, names, range(len(tensors))):
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
    """A storage's bytes as drawn ``cells`` windows and ``gap``s: all of it if it fits in ``budget``, else windows
    around the rows' reach that, with their gap markers, are at most half as wide (``WINDOWED_SHARE``), so a big
    storage's picture stays narrow; only more row starts than fit widen it."""
    extents = [m.layout.byte_range for m in members if m.layout.numel]
    if total <= budget or not extents:
        return _joined([(0, min(total, budget))], total, unit)
    low, high = min(start for start, _ in extents), max(stop for _, stop in extents)
    marker = GAP_UNITS * unit  # a gap marker's width, in bytes of the narrowest cell
    room = max(_align_down(budget // WINDOWED_SHARE, align), 2 * marker + 4 * align)
    if high - low <= room - 2 * marker:
        width = _align_down(room - 2 * marker, align)
        start = _align_down(low - (width - (high - low)) // 2, align)
        start = max(0, min(start, _align_down(total - width, align)))
        return _joined([(start, min(start + width, total))], total, unit)
    # Too wide: show where each row's reads start (every row's first cells are always drawn), then where
    # the reads end, the overall end first.
    anchors = [("start", start) for start, _ in extents] + [("end", high)] + [("end", stop) for _, stop in extents]
    unique = list(dict.fromkeys(anchors))
    starts = sum(kind == "start" for kind, _ in unique)
    least = 4 * align  # a window's fewest bytes: 4 cells

    def fits(count: int) -> bool:
        """Whether ``count`` windows of 4 cells or more fit in the room, or (row starts only) in the budget."""
        return (room - (count - 1) * marker) // count >= least or (count <= starts and budget // count >= least)

    count = next((n for n in range(min(len(unique), max(MAX_WINDOWS, starts)), 1, -1) if fits(n)), 1)
    width = max(_align_down((room - (count - 1) * marker) // count, align), least)
    while True:
        context = min(_align_down(width // 4, align), 2 * align)
        spans = []
        for kind, at in unique[:count]:
            begin = _align_down(at, align) - context if kind == "start" else _align_up(at, align) + context - width
            begin = max(0, min(begin, _align_down(total - width, align)))
            spans.append((begin, min(begin + width, total)))
        pieces = _joined(spans, total, unit)
        # Markers before the first window or after the last may not fit: narrow the windows until they do.
        excess = sum(stop - begin if kind == "cells" else marker for kind, begin, stop in pieces) - room
        if excess <= 0 or width <= least:
            return pieces
        width = max(width - _align_up(-(-excess // count), align), least)


def _joined(spans: list[tuple[int, int]], total: int, unit: int) -> tuple[tuple[str, int, int], ...]:
    """Byte spans as ``cells`` pieces left to right, with ``gap`` pieces between them and up to ``total``."""
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


def _slots(pieces, size: int) -> list[range]:
    """Per drawn window, the storage indices (in elements of ``size`` bytes) whose bytes lie wholly in it."""
    return [range(_align_up(start, size) // size, stop // size) for kind, start, stop in pieces if kind == "cells"]


def _element_text(position: int, shape) -> str:
    """How a row names the element at row-major ``position``: its index, e.g. ``[1,0]`` (``[]`` for 0-d)."""
    return "[" + ",".join(str(i) for i in unravel_index(position, shape)) + "]" if shape else "[]"


def _row_plan(strip_no: int, member: _Member, pieces) -> tuple[list[PictureCell], list[PictureStep]]:
    """A row's drawn cells (ghosts past the storage's end included), and one step per dimension longer than 1.

    A cell read by one element names that element by its index (``[1,0]``), one read by several says how many
    (``×3``): a row's numbers are never storage indices or values (the grid and the strip hold those)."""
    lay, size = member.layout, member.layout.itemsize
    windows = _slots(pieces, size)
    slots = [index for window in windows for index in window]
    end = pieces[-1][2] // size  # the storage's end, in the row's dtype
    past = lay.numel and lay.index_range[1] >= end  # listed elements past it: the first few are drawn as ghosts
    ghosts = sorted({i for i in lay.element_indices if end <= i < end + GHOST_CELLS}) if past else []
    found = lay.positions_at(slots + ghosts, tail=TAIL_LISTED)
    # With every element listed, counts are exact; if the model says no two elements share a cell,
    # a listed read is exact too. Otherwise unlisted elements may also read a cell.
    complete = not lay.indices_truncated
    exact = complete or lay.has_internal_overlap is False

    def named(positions: tuple[int, ...], sure: bool) -> str:
        if sure and len(positions) == 1:
            return _element_text(positions[0], lay.shape)
        return f"×{len(positions)}" + ("" if sure else "+")

    cells = []
    for index in slots:
        positions = tuple(found.get(index, ()))
        if positions:
            state, count_exact, text = "read", exact, named(positions, exact)
        elif not complete and lay.index_range[0] <= index <= lay.index_range[1]:
            state, text, count_exact = "unknown", "?", False
        else:
            state, text, count_exact = "unread", "", True
        cells.append(PictureCell(strip_no, member.name, index, index * size, size, state, positions, count_exact, text))
    for index in ghosts:
        positions = tuple(found.get(index, ()))
        text = named(positions, True)
        cells.append(PictureCell(strip_no, member.name, index, index * size, size, "ghost", positions, exact, text))
    shown = set(slots)
    return cells, [
        PictureStep(strip_no, member.name, dim, lay.stride[dim], origin, target, origin in shown and target in shown)
        for dim, origin, target in lay.step_targets()
    ]


def _value_strip(strip_no: int, holder, dtype, pieces, show_values: bool) -> list[PictureCell]:
    """The storage's bytes read as another ``dtype`` (a ``view(torch.uint8)`` row's): one ``"value"`` cell per
    element of that dtype, in a row named ``"storage as <dtype>"`` drawn under the strip's ruler."""
    size, cells, name = dtype.itemsize, [], f"storage as {dtype_name(dtype)}"
    for window in _slots(pieces, size):
        texts = ("",) * len(window)
        if show_values and holder is not None:
            texts = storage_values_text(holder, window.start, window.stop, len(window) or 1, dtype)
        for index, text in zip(window, texts):
            cells.append(PictureCell(strip_no, name, index, index * size, size, "value", (), True, text))
    return cells


def _shown(size: int, cap: int) -> tuple[int | None, ...]:
    """The indices of a dimension a grid draws: all of them, or the first ``cap - 2``, ``None`` ("…"), the last."""
    if size <= cap:
        return tuple(range(size))
    return (*range(cap - 2), None, size - 1)


def _grid_plan(strip_no: int, member: _Member, copied=None) -> PictureGrid:
    """A row's elements as a grid of its shape (capped), each with the storage index the address formula gives;
    ``copied`` is ``(source row, source storage index per position)`` for a copy."""
    lay, shape = member.layout, member.layout.shape
    if lay.numel == 0:
        return PictureGrid(strip_no, member.name, shape, (), (), "")
    leading = shape[:-2]  # above 2-D: each block's leading indices
    down, across = (1, 1, *shape)[-2:]  # 0-d: one row of one column; 1-D: one row
    rows = _shown(down, NESTED_CAP if leading else GRID_ROWS)
    columns = _shown(across, NESTED_CAP if leading else GRID_COLUMNS * (2 if len(shape) == 1 else 1))
    # Above 2-D: one line of blocks per index of the dims before the last leading one, across by that one.
    line_dims = leading[:-1]
    lines = [
        unravel_index(k, line_dims) if k is not None else (None,) * len(line_dims)
        for k in _shown(math.prod(line_dims), GRID_LINES)
    ]
    places = _shown(leading[-1], GRID_BLOCKS) if leading else ((),)
    spots = [(r, c, i, j) for r, i in enumerate(rows) for c, j in enumerate(columns) if None not in (i, j)]
    blocks, elements = [], []
    end = lay.storage_numel  # elements reading this index or a later one are ghosts
    for line_no, line in enumerate(lines):  # at most one elided ("⋮") line stands for every line left out
        for place_no, place in enumerate(places):
            lead = (*line, place) if leading else ()
            blocks.append(GridBlock(lead, line_no, place_no, rows, columns))
            if None in lead:
                continue
            for r, c, i, j in spots:  # each element the block draws: its place in the block, its last two indices
                index = (*lead, i, j)[-len(shape) :] if shape else ()
                position = sum(k * math.prod(shape[d + 1 :]) for d, k in enumerate(index))
                at = lay.index_of(*index)
                source = copied[1][position] if copied and position < len(copied[1]) else None
                elements.append(GridElement(len(blocks) - 1, r, c, index, position, at, at >= end, source))
    counts = {  # (drawn, in all) of what a capped grid leaves out; a grid up to 2-D is one block
        "rows": (sum(i is not None for i in rows), down),
        "columns": (sum(j is not None for j in columns), across),
        "blocks": (sum(None not in block.lead for block in blocks), math.prod(leading)),
    }
    parts = [f"{shown:,} of {whole:,} {what}" for what, (shown, whole) in counts.items() if shown < whole]
    cut = f"{member.name}'s grid shows {', '.join(parts)}" if parts else ""  # e.g. "x's grid shows 6 of 100 rows"
    return PictureGrid(strip_no, member.name, shape, tuple(blocks), tuple(elements), cut, copied[0] if copied else "")


def _read_counts(lay: Layout) -> tuple[int, int, int] | None:
    """(distinct cells read, fewest elements reading one, most reading one), or None when not known.

    Exact from the listing when every element is listed; past the listing, known when the dimensions left after
    dropping the stride-0 ones reach no cell twice (each stride beyond all the smaller ones' reach): each cell is
    then read once per combination of the stride-0 dimensions' indices.
    """
    if lay.numel == 0:
        return None
    if not lay.indices_truncated:
        counts = np.unique(np.asarray(lay.element_indices), return_counts=True)[1]
        return len(counts), int(counts.min()), int(counts.max())
    repeats = math.prod(size for size, step in zip(lay.shape, lay.stride) if step == 0)
    reach = 0
    for step, size in sorted((step, size) for size, step in zip(lay.shape, lay.stride) if step and size > 1):
        if step <= reach:
            return None  # the dimensions may reach a cell twice: only a full listing could say how often
        reach += step * (size - 1)
    return lay.numel // repeats, repeats, repeats


def _how_often(fewest: int, most: int) -> str:
    """'each once', 'each 3 times', '1 to 2 times each'."""
    if most == 1:
        return "each once"
    return f"each {most:,} times" if fewest == most else f"{fewest:,} to {most:,} times each"


def _repeat_text(lay: Layout) -> str:
    """How often a fully listed layout reads its cells, e.g. 'each 3 times (stride 0 repeats them)'."""
    distinct, fewest, most = _read_counts(lay)
    zero = any(step == 0 and size > 1 for size, step in zip(lay.shape, lay.stride))
    if distinct == 1:  # one cell: not "each"
        return f"{most:,} times" + (" (stride 0 repeats it)" if zero else "")
    return _how_often(fewest, most) + (" (stride 0 repeats them)" if zero else "")


def _reads_text(lay: Layout, in_bytes: bool) -> str:
    """Which cells a layout reads and how often each, e.g. 'reads cells 0–11 (contiguous)', 'reads all 12 cells 0–11,
    each once, in another order' (a transpose), 'reads cell 0 only, 12 times (stride 0 repeats it)' (an expand of
    one element), 'reads 4 of the 6 cells 5–10, each once' (a slice with gaps). ``in_bytes``: the row's itemsize
    differs from its strip's first row's, so the bytes are given too."""
    if lay.numel == 0:
        return "reads nothing (no elements)"
    low, high = lay.index_range
    byte_span = f"bytes {lay.byte_range[0]:,}–{lay.byte_range[1] - 1:,}"
    if lay.is_contiguous:  # every cell of the range once, in storage order
        span = byte_span if in_bytes else (f"cell {low:,}" if low == high else f"cells {low:,}–{high:,}")
        return f"reads {span} (contiguous)"
    in_bytes_too = f" ({byte_span})" if in_bytes else ""
    counts = _read_counts(lay)
    if counts is None:
        return f"reads {lay.numel:,} elements within cells {low:,}–{high:,}{in_bytes_too}"
    distinct, fewest, most = counts
    zero = any(step == 0 and size > 1 for size, step in zip(lay.shape, lay.stride))
    if distinct == 1:
        repeated = " (stride 0 repeats it)" if zero else ""
        return f"reads cell {low:,}{in_bytes_too} only, {lay.numel:,} times{repeated}"
    often = _how_often(fewest, most) + (" (stride 0 repeats them)" if zero else "")
    if distinct == high - low + 1:  # no gaps
        if most == 1:  # each cell of the range once, yet not contiguous: in an order other than storage order
            return f"reads all {distinct:,} cells {low:,}–{high:,}{in_bytes_too}, each once, in another order"
        return f"reads all {distinct:,} cells {low:,}–{high:,}{in_bytes_too}, {often}"
    return f"reads {distinct:,} of the {high - low + 1:,} cells {low:,}–{high:,}{in_bytes_too}, {often}"


def _overlaps(a: torch.Tensor | None, b: torch.Tensor | None) -> bool | None:
    """``shares_memory(a, b)``, or None where there is no memory to compare: a Layout (None), a meta tensor, a
    tensor whose storage was resized below what its elements need."""
    if a is None or b is None or a.device.type == "meta" or b.device.type == "meta":
        return None
    try:
        return shares_memory(a, b)
    except ValueError:  # a storage resized to 0 (FSDP): nothing there to share
        return None


def _relation(member: _Member, first: _Member) -> str | None:
    """How a row's cells relate to the strip's first row, from ``compare_reads`` or ``shares_memory``."""
    lay, name = member.layout, first.name
    if lay.numel == 0 or first.layout.numel == 0:
        return None
    overlap = compare_reads(lay, first.layout)
    if overlap is None:
        shared = _overlaps(member.tensor, first.tensor)
        if shared is None:
            return None
        if shared:
            return f"shares memory with {name}"
        return f"shares no memory with {name} (same storage, no overlap)"
    unit, mine, theirs, common = overlap.unit, overlap.mine, overlap.theirs, overlap.common
    if common == mine == theirs:
        if unit == "byte":
            return f"reads the same {mine:,} bytes as {name}"
        if lay.numel != mine:
            cells = "cell" if mine == 1 else f"{mine:,} cells"
            return f"reads the same {cells} as {name}, {_repeat_text(lay)}"
        if first.layout.numel != theirs:  # the first row repeats cells: orders of different lengths
            return f"reads the same {mine:,} cells as {name}, each once"
        order = "the same" if overlap.same_order else "a different"
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
    where = [f"shape {tuple_text(lay.shape)}", f"stride {tuple_text(lay.stride)}", f"offset {lay.storage_offset}"]
    contiguous = "contiguous" if lay.is_contiguous else "not contiguous"
    formats = {4: torch.channels_last, 5: torch.channels_last_3d}
    memory_format = formats.get(len(lay.shape))
    tensor = member.tensor
    if (
        not lay.is_contiguous
        and memory_format
        and tensor is not None
        and tensor.is_contiguous(memory_format=memory_format)
    ):
        contiguous = f"not contiguous (row-major); contiguous as {str(memory_format).removeprefix('torch.')}"
    label = f"{member.name}: {'  '.join(where)}  ·  {dtype_name(lay.dtype)}  ·  {contiguous}"
    head = f"{member.name}: {' '.join(where)}"
    bits = [(what, bit) for what, bit, flag in LAZY_BITS if member.tensor is not None and flag(member.tensor)]
    if bits:  # a lazy conj or neg view: say what it does to the values it reads
        whats, names = zip(*bits)
        lazy = f"reads each stored value {' and '.join(whats)}: the lazy {' and '.join(names)} bit"
        label += f"  ·  {lazy}"
        head += f" ({lazy})"
    if lay.dtype != first.layout.dtype:
        head += f" as {dtype_name(lay.dtype)} ({plural(lay.itemsize, 'byte')} each)"
    relation = _relation(member, first) if member is not first else None
    if relation is not None and relation.startswith("reads the same"):
        return label, f"{head} {relation}"
    reads = _reads_text(lay, lay.itemsize != first.layout.itemsize)
    return label, f"{head} {reads}" + (f", {relation}" if relation else "")


def _byte_range(member: _Member) -> tuple[int, int] | None:
    """The bytes ``[start, stop)`` of the storage under a row: none for a meta tensor (it has no memory), None
    where they are not known (a Layout)."""
    tensor = member.tensor
    if tensor is None:
        return None
    if tensor.device.type == "meta":
        return 0, 0
    storage = tensor.untyped_storage()
    return storage.data_ptr(), storage.data_ptr() + storage.nbytes()


def _owner(member: _Member) -> str:
    """``a's``, or ``the storage of "a, b"`` for a name with spaces or commas (so it does not run into the words)."""
    return f'the storage of "{member.name}"' if re.search(r"[\s,]", member.name) else f"{member.name}'s"


def _numbers(numbers: list[int]) -> str:
    """Storage numbers in words: ``1``, ``1 and 2``, ``1, 2 and 4``, ``1–3`` for a run of three or more."""
    if len(numbers) >= 3 and numbers == list(range(numbers[0], numbers[-1] + 1)):
        return f"{numbers[0]}–{numbers[-1]}"
    return ", ".join(map(str, numbers[:-1])) + (" and " if len(numbers) > 1 else "") + str(numbers[-1])


def _strip_description(strip_no: int, group: list[_Member], earlier: list[_Member], pieces, slots) -> tuple[str, str]:
    """A strip's description (its storage's size, the cells shown, how its storage relates to the earlier strips'
    storages: the summary says it) and its heading drawn in the picture: the same, short, when the picture has
    several storages ("storage 2: 3 float32 (12 bytes) · not shared with storage 1"). ``earlier`` holds the first
    row of each earlier strip. Storages are compared by their bytes, so two storage objects over one buffer (two
    ``from_numpy`` of one array's parts) share memory even where the rows drawn on them do not."""
    lay = group[0].layout
    size = f"{lay.storage_numel:,} {dtype_name(lay.dtype)} ({lay.storage_nbytes:,} bytes)"
    if lay.storage_nbytes % lay.itemsize:  # e.g. a float32 view of 7 uint8 bytes: 1 whole float32 and 3 bytes
        extra = plural(lay.storage_nbytes % lay.itemsize, "byte")
        size = f"{lay.storage_nbytes:,} bytes ({lay.storage_numel:,} whole {dtype_name(lay.dtype)} and {extra})"
    description, heading, parts = f"storage of {size}", f"storage {strip_no + 1}: {size}", []
    if any(kind == "gap" for kind, _, _ in pieces):
        shown = f", cells {' and '.join(f'{w.start:,}–{w.stop - 1:,}' for w in slots)} shown"
        description, heading = description + shown, heading + shown
    mine, theirs = _byte_range(group[0]), [_byte_range(first) for first in earlier]
    if earlier and (mine is None or None in theirs):
        description += " (a Layout does not say which storage it is over: drawn apart)"
        parts.append("a Layout: which storage is not known")
    elif earlier:
        shared = [k for k, (start, stop) in enumerate(theirs) if start < mine[1] and mine[0] < stop]
        if shared:  # two storage objects over overlapping bytes: two from_numpy (or frombuffer) of one array's parts
            where = []
            for k in shared:
                gap = mine[0] - theirs[k][0]
                owner = _owner(earlier[k])
                where.append(
                    f"this one starts at byte {gap:,} of {owner}"
                    if gap >= 0
                    else f"{owner} starts at its byte {-gap:,}"
                )
            owners = " and ".join(_owner(earlier[k]) for k in shared)
            description += (
                f", another storage object over memory {owners} storage also uses (shared: {'; '.join(where)})"
            )
            parts.append(
                f"shares memory with storage{'s' if len(shared) > 1 else ''} {_numbers([k + 1 for k in shared])}"
            )
        else:
            description += f", separate from {' and '.join(_owner(first) for first in earlier)} (not shared)"
            numbers = list(range(1, len(earlier) + 1))
            joined = _numbers(numbers).replace(" and ", " or ")
            parts.append(f"not shared with storage{'s' if len(numbers) >= 3 else ''} {joined}")
    if len(group) > 1 and any(m.tensor is None for m in group):
        description += " (Layouts drawn on one strip because their storage sizes match)"
        parts.append("Layouts on one strip: same storage size")
    return description, " · ".join([heading, *parts])


def _strip_sources(group: list[_Member], copied: dict, pieces) -> tuple[str, tuple[tuple[int, int], ...]]:
    """For a storage holding a copy: ``(source row, ((storage index, source storage index), ...))`` for each drawn
    cell one element of the copy reads, from the copy's listed element indices (``("", ())`` otherwise). A cell
    read by elements holding different sources' values gets no number: it has no one source."""
    member = next((m for m in group if m.name in copied), None)
    if member is None:
        return "", ()
    source_row, indices = copied[member.name]
    size, found = member.layout.itemsize, {}
    for at, source in zip(member.layout.element_indices, indices):
        found.setdefault(at, set()).add(source)
    drawn = [(begin, stop) for kind, begin, stop in pieces if kind == "cells"]
    pairs = tuple(
        (at, next(iter(sources)))
        for at, sources in sorted(found.items())
        if len(sources) == 1 and any(begin <= at * size and (at + 1) * size <= stop for begin, stop in drawn)
    )
    return source_row, pairs


def _check_copied(copied, names: list[str]) -> dict:
    """``copied`` checked: ``{copy's name: (source's name, one source storage index per element)}``."""
    if copied is None:
        return {}
    require_type(copied, dict, "copied", "a dict {name: (source name, indices)} or None")
    for name, value in copied.items():
        if name not in names:
            raise ValueError(f"copied names {name!r}, which is not one of the names {names}")
        if not (isinstance(value, tuple) and len(value) == 2 and value[0] in names and value[0] != name):
            raise ValueError(f"copied[{name!r}] must be (the name of another row, indices), got {value!r}")
        for k, index in enumerate(value[1]):
            require_int(index, f"copied[{name!r}][1][{k}]", 0)
    return copied


def layout_picture(
    *tensors, names=None, max_cells: int = 64, show_values: bool = True, values_from=None, copied=None
) -> LayoutPicture:
    """Plan a layout picture as data: the grids, cells, element numbers, strides and summary ``draw_layout`` draws.

    Args:
        *tensors: strided tensors (any dtype; values are read only from the drawn cells), or ``Layout`` objects
            (drawn without values; a Layout does not say which storage it is over, so Layouts with the same
            storage size share a strip). A Layout that runs past its storage's end (``planned_layout`` of a
            setting torch refuses) is drawn with ghost cells where it would read past the end.
        names: one display name per tensor, e.g. ``["a", "a.t()"]``; default ``t0``, ``t1``, ...
        max_cells: draw at most this many of the narrowest cells per storage (at least 8; more than
            ``MAX_CELLS`` = 512 is capped there, and the summary says so). A longer storage is drawn as windows
            around the rows' starts and ends that, with their "not shown" markers, are half as wide.
        show_values: write each storage cell's value in it (read from the first tensor's storage).
        values_from: a tensor whose storage gives the values of a strip of Layouts only (None: no such strip).
        copied: ``{name: (source name, indices)}``: the row ``name`` is a copy, its element at row-major position
            p holding the value of storage cell ``indices[p]`` of row ``source name``'s storage; a row "from
            <source name>" under the copy's storage strip gives, under each cell, the source cell's index (its grid,
            like every grid, names only its own storage indices).

    Returns:
        A frozen ``LayoutPicture`` (strips, rows, cells, steps, summary, notes, grids).

    Raises:
        TypeError: an argument has the wrong type (the message names it).
        ValueError: no tensors; bad names; ``max_cells`` < 8; ``show_values=True`` for a strip of
            Layouts only (a Layout holds no values) without ``values_from``.
    """
    names = _row_names(names, len(tensors))
    require_int(max_cells, "max_cells", MIN_CELLS)
    require_bool(show_values, "show_values")
    if values_from is not None:
        require_tensor(values_from, "values_from")
    copied = _check_copied(copied, names)
    groups = _group(tensors, names)
    strips, rows, cells, steps, grids, summary_parts, valued = [], [], [], [], [], [], []
    for strip_no, group in enumerate(groups):
        first = group[0]
        holder = next((m.tensor for m in group if m.tensor is not None), values_from)
        if show_values and holder is None:
            raise ValueError(
                f"show_values=True needs a tensor to read values from, but {first.name} is a Layout "
                "(it holds no values): pass show_values=False, or pass the tensor itself"
            )
        dtype, size = first.layout.dtype, first.layout.itemsize
        sizes = [m.layout.itemsize for m in group]
        unit, align = math.gcd(*sizes), math.lcm(*sizes)
        budget = max(align, _align_down(min(max_cells, MAX_CELLS) * unit, align))
        pieces = _pieces(group, _align_down(first.layout.storage_nbytes, align), budget, align, unit)
        windows = _slots(pieces, size)
        description, heading = _strip_description(strip_no, group, [g[0] for g in groups[:strip_no]], pieces, windows)
        heading = heading if len(groups) > 1 else description  # one storage: nothing to tell it apart from
        source_row, sources = _strip_sources(group, copied, pieces)
        strips.append(
            PictureStrip(
                strip_no, size, unit, pieces, tuple(m.name for m in group), description, heading, source_row, sources
            )
        )

        for window in windows:
            texts = ("",) * len(window)
            if show_values:  # the raw storage read as the strip's dtype (a view(dtype) of the tensor may not exist)
                texts = storage_values_text(holder, window.start, window.stop, len(window) or 1, dtype)
            for index, text in zip(window, texts):
                cells.append(PictureCell(strip_no, "storage", index, index * size, size, "value", (), True, text))

        summary_parts.append(description)
        for other in dict.fromkeys(m.layout.dtype for m in group if m.layout.dtype != dtype):
            cells += _value_strip(strip_no, holder, other, pieces, show_values)
        for member in group:
            own_values = show_values and member.layout.dtype != dtype
            row_cells, row_steps = _row_plan(strip_no, member, pieces)
            cells += row_cells
            steps += row_steps
            grids.append(_grid_plan(strip_no, member, copied.get(member.name)))
            label, text = _row_texts(member, first)
            summary_parts.append(text)
            rows.append(PictureRow(strip_no, member.name, label, member.layout))
            if own_values:
                valued.append(rows[-1])

    notes, summary = _legend(strips, cells, grids, valued), "; ".join(summary_parts)
    if any(_drawn(grid) and grid.elements for grid in grids):
        which = "each tensor" if all(_drawn(grid) for grid in grids) else "each tensor of 2 or more dims"
        summary += f"; {which} is also drawn as a grid of its shape, each element naming the storage index it reads"
    for name, (source, indices) in copied.items():
        more = f", … ({len(indices):,} in all)" if len(indices) > 12 else ""
        summary += f"; {name}'s elements hold the values of {source}'s cells {', '.join(map(str, indices[:12]))}{more}"
    cuts = [grid.cut for grid in grids if grid.cut and _drawn(grid)]
    if cuts:
        summary += f" ({'; '.join(cuts)})"
    if any(cell.state == "unknown" for cell in cells):
        summary += f"; cells marked ? were not checked (tensors longer than {MAX_LISTED:,} elements)"
    for row in rows:
        if row.layout.numel and row.layout.index_range[1] >= row.layout.storage_numel:
            outside = row.layout.index_range[1] - row.layout.storage_numel + 1
            ghosts = sum(1 for cell in cells if cell.row == row.name and cell.state == "ghost")
            drawn = f"{plural(ghosts, 'dashed ghost cell')} drawn just past it"
            if ghosts and ghosts < outside:
                drawn += f" (only the first {GHOST_CELLS} cells past the end are drawn)"
            elif not ghosts:
                drawn = f"none drawn (its elements there lie beyond the {GHOST_CELLS} cells drawn past the end)"
            summary += (
                f"; {row.name} runs past the storage's end (its last element would read index "
                f"{row.layout.index_range[1]:,}, {plural(outside, 'cell', fmt=',')} past it): {drawn}"
            )
    if max_cells > MAX_CELLS:
        summary += f"; max_cells={max_cells:,} was capped at {MAX_CELLS:,} cells per storage"
    summary = visible(summary)  # a name's control characters and lone surrogates written as escapes, as drawn
    return LayoutPicture(tuple(strips), tuple(rows), tuple(cells), tuple(steps), summary, tuple(notes), tuple(grids))


def _legend(strips, cells, grids, valued) -> list[str]:
    """What each number, count and border in the picture means, one line each: the long legend, for an explorer's
    help and the docs (the picture itself labels its parts in place: "index", "storage", "bytes")."""
    marks = {  # what a cell's look says, noted when some cell has it
        "repeated": "×n (hatched): a cell read by n elements (n+ : at least n)",
        "unread": "dotted border: not read by that tensor",
        "unknown": f"?: not checked (only the first {MAX_LISTED:,} and last {TAIL_LISTED:,} elements are listed)",
        "ghost": "dashed red: past the end of the storage, where the setting would read (torch refuses it)",
    }
    states = {cell.state for cell in cells} | {"repeated" for cell in cells if cell.repeated}
    notes = []
    if any(_drawn(grid) for grid in grids):
        notes.append("grids: element t[i, j] in its place, with the storage index it reads written in it")
    for strip in strips:
        if strip.sources:
            notes.append(
                f"from {strip.source_row}: under a cell of storage {strip.index + 1}, the index of the cell of "
                f"{strip.source_row}'s storage whose value it holds"
            )
    has_values = any(cell.text for cell in cells if cell.row == "storage")
    notes.append("storage: the index above each cell" + (", its value inside" if has_values else ""))
    notes.append("tensor rows: under each storage cell, the index [i,j] of the element that reads it")
    for row in valued:
        notes.append(
            f"storage as {dtype_name(row.layout.dtype)}: the same bytes read as {row.layout.dtype}, values inside"
        )
    notes += [note for state, note in marks.items() if state in states]
    units = ", ".join(plural(itemsize, "byte") for itemsize in sorted({strip.itemsize for strip in strips}))
    notes.append(f"ruler under each storage: byte offsets ({units} per cell)")
    return notes


def _drawn(grid: PictureGrid) -> bool:
    """Whether a grid is drawn: a 1-D or 0-d tensor's grid would repeat its row, so only 2-D and up are, and a
    copy's (its elements say which cell's value each holds, which its row cannot)."""
    return len(grid.shape) >= 2 or bool(grid.source_row)


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
STRIP_GAP_ACROSS = 1.5  # between storages drawn side by side
SIDE_BY_SIDE = 29.9  # cells: separate storages sit side by side when together no wider (1,037 px at 100 dpi)
TITLE_GAP = 0.35  # between the ruler (or a narrower strip) and the storage's title under it
VALUE_STRIP_GAP = 0.15  # above a narrower strip of the same bytes as another dtype
VALUE_STRIP_HEIGHT = 0.8
CONNECT_MAX = 6  # grids of at most this many drawn elements get a line from each element to its storage index
CONNECT_ROOM = 1.3  # extra room between such grids and the strip, for the lines to be told apart
GUTTER_PAD = 0.25  # between the in-place labels left of a strip and the strip
LINE_UNITS = palette.TEXT_PT * 1.2 / (0.34 * 72)  # a second line of a label, in layout units
GHOST_GAP = 0.5  # between a storage's end and the ghost cells past it
RULER_HEIGHT = 0.7  # the byte ruler under a storage strip
RULER_TICK = 0.25  # a cell edge's tick; a byte's tooth is half as long
GRID_GAP = 0.3  # above and below a strip's band of grids
GRID_TITLE_HEIGHT = 0.7
BLOCK_LABEL_HEIGHT = 0.6  # a block's leading indices, above it (more than 2 dims)
GRID_HEAD_HEIGHT = 0.5  # column numbers above a block
ELEMENT_HEIGHT = 0.8
COMPACT_LABEL = 6.0  # cells: side by side, a row's label wraps to its block's width, or at least this
SOURCE_ROW_HEIGHT = 0.6  # a copy's row "from x" under its byte ruler: the source cell of each cell's value
MAX_ELEMENT_WIDTH = 2.5  # cells: an element widens to fit its storage index up to this, then the text shrinks
BLOCK_GAP = 0.6  # between blocks across
LINE_GAP = 0.25  # between lines of blocks
PANEL_GAP = 1.2  # between the grids of two tensors
GRID_BAND = 40  # cells: grids wider than this together (and than their strip) wrap to a new line
GRID_LINE_GAP = 0.5  # between lines of grids
CELL_INSET = 0.04  # a row cell's inset on each side, so neighbours' borders stay apart
GAP_INSET = 0.1  # a gap marker's inset on each side
LOOP_REACH = 0.3  # a stride-0 loop spans this far either side of its cell's middle
LOOP_DROP = 0.05  # the loop starts this far below its row
LOOP_POINTS = 8  # points along a loop's curve
ARROW_ROOM = 0.6  # room right of an arrow's start for a loop
LABEL_PAD = 0.3  # between the rightmost arrow and the step labels
FIT_ROOM = 0.9  # the share of a cell's width its text may fill
TURN_INDICES_AT = 0.9  # storage indices are turned upright when wider than this share of a cell
MIN_FONT_PT = palette.MIN_TEXT_PT  # text shrunk to fit a cell stops here
FONT_PT = palette.TEXT_PT
SMALL_PT = palette.MIN_TEXT_PT  # storage indices, positions, gap markers, the ruler
STEP_PT = palette.MIN_TEXT_PT + 0.5  # step labels

# Each tensor's colour (palette.tensor_colour: twelve before one repeats) fills its grid and its row's cells.
# Colour is never the only cue: read cells also carry a number and a solid border, unread cells a dotted one,
# repeats a count and hatching, ghost cells past the storage's end a dashed red border.
ROW_FILLS = palette.TENSOR_TINTS
DASHED, DOTTED = (3.7, 1.6), (1.0, 1.65)  # matplotlib's "--" and ":", in line widths
STYLES = {
    "storage": Style(fill=palette.STORAGE, edge=palette.MUTED, width=1.0),
    **{f"row{i}": Style(fill=fill, edge=palette.INK, width=1.0) for i, fill in enumerate(ROW_FILLS)},
    **{
        f"row{i}-repeated": Style(fill=fill, edge=palette.INK, width=2.0, hatch=True)
        for i, fill in enumerate(ROW_FILLS)
    },
    "unread": Style(fill=palette.PAPER, edge=palette.FAINT, width=1.0, dash=DOTTED),
    "unknown": Style(fill=palette.tint(palette.STORAGE, 0.5), edge=palette.FAINT, width=1.0, dash=DASHED),
    "ghost": Style(fill=palette.PAPER, edge=palette.STALE, width=1.2, dash=DASHED),
    "gap": Style(fill=palette.PAPER, edge=palette.FAINT, width=0.8, dash=DASHED),
    "tick": Style(edge=palette.INK, width=0.8, zorder=2),
    "ruler": Style(edge=palette.MUTED, width=0.6, zorder=2),
    "step": Style(edge=palette.INK, width=1.2, zorder=2),
    "step-not-shown": Style(edge=palette.INK, width=1.2, dash=DASHED, zorder=2),
    "loop": Style(edge=palette.INK, width=1.0, zorder=2),
    "strip-title": Style(size=palette.TITLE_PT, weight="bold", color=palette.INK, zorder=3),
    "index": Style(size=SMALL_PT, color=palette.MUTED, zorder=3),
    "ruler-text": Style(size=SMALL_PT, color=palette.MUTED, zorder=3),
    "value": Style(size=FONT_PT, color=palette.INK, zorder=3),
    "unchecked": Style(size=FONT_PT, color=palette.MUTED, zorder=3),
    "count": Style(size=FONT_PT, weight="bold", color=palette.INK, halo=True, zorder=3),
    "element-index": Style(size=FONT_PT, color=palette.INK, zorder=3),
    "ghost-index": Style(size=FONT_PT, color=palette.MUTED, zorder=3),
    "gutter": Style(size=SMALL_PT + 0.5, color=palette.MUTED, zorder=3),
    "connector": Style(edge=palette.MUTED, width=0.6, zorder=0),
    "ghost-text": Style(size=SMALL_PT, color=palette.STALE, zorder=3),
    "gap-text": Style(size=SMALL_PT, color=palette.INK, line_spacing=1.0, zorder=3),
    "elided": Style(size=FONT_PT + 2, color=palette.MUTED, zorder=3),
    "label": Style(size=FONT_PT, color=palette.INK, zorder=3),
    "step-text": Style(size=STEP_PT, color=palette.INK, halo=True, zorder=3),
    "grid-title": Style(size=FONT_PT, weight="bold", color=palette.INK, zorder=3),
    "grid-head": Style(family=palette.MONO, size=SMALL_PT, color=palette.MUTED, zorder=3),
    "source": Style(size=SMALL_PT, color=palette.INK, zorder=3),
    "grid-elided": Style(size=FONT_PT, color=palette.MUTED, zorder=3),
    "element": Style(family=palette.MONO, size=FONT_PT, color=palette.INK, zorder=3),
}


def _cells_wide(text: str, style: str) -> float:
    """How many cells wide ``text`` is in ``style`` (measured by ``scene.text_width``)."""
    look = STYLES[style]
    return text_width(text, look.family, look.size, look.weight) / CELL_PT


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
    half, byte = itemsize / strip.unit_bytes / 2, step.from_index * itemsize
    start = x_at(byte)
    if start is None:
        return None
    if step.stride == 0:
        return start + half, None, f"dim {step.dim}: stride 0 = stays on the same cell"
    unit, size = ("cell", 1) if itemsize == strip.itemsize else ("byte", itemsize)  # a row of another dtype: bytes
    label = f"dim {step.dim}: stride {step.stride} = jump {plural(step.stride * size, unit, fmt=',')}"
    if step.shown:
        return start + half, x_at(step.to_index * itemsize) + half, label
    # The target cell is elided: the arrow points into the gap after this window, and says so.
    window_end = next((stop for kind, begin, stop in strip.pieces if kind == "cells" and begin <= byte < stop), None)
    if window_end is None:  # a meta tensor's elements may lie past its (empty) storage: no cell to start at
        return None
    return start + half, x_at(window_end) + GAP_UNITS / 2, label + " (target not shown)"


def _loop(x: float, y: float) -> tuple:
    """Points along a stride-0 loop: down from (x0, y) and back up to its start's right, in points."""
    x0, x1 = x - LOOP_REACH * CELL_PT, x + LOOP_REACH * CELL_PT
    # The cubic curve a loop was drawn with: control points 4 points outside and 16 points below its ends.
    curve = ((x0, y), (x0 - 4, y + 16), (x1 + 4, y + 16), (x1, y + 1))
    fractions = [k / (LOOP_POINTS - 1) for k in range(LOOP_POINTS)]  # along the curve, from 0 to 1
    bernstein = [((1 - t) ** 3, 3 * t * (1 - t) ** 2, 3 * t * t * (1 - t), t**3) for t in fractions]  # the weights
    return tuple(tuple(sum(w * p[axis] for w, p in zip(weights, curve)) for axis in (0, 1)) for weights in bernstein)


def _px(x: float) -> float:
    """Points across from cells across."""
    return (x + SIDE_MARGIN) * CELL_PT


def _py(y: float) -> float:
    """Points down from layout units down."""
    return y * ROW_PT


def _box(x: float, y: float, w: float, style: str, ident: str, h: float = CELL_HEIGHT) -> Rect:
    """A rectangle ``w`` cells wide and ``h`` layout units tall with its top left at (x, y)."""
    return Rect(_px(x), _py(y), w * CELL_PT, h * ROW_PT, style, ident)


def _centred(x: float, y: float, text: str, style: str, ident: str = "", fit: float = 0.0) -> Text:
    """A text centred on (x, y), shrunk (down to MIN_FONT_PT) to fit ``fit`` cells across when that is given."""
    room, wide = fit * FIT_ROOM, _cells_wide(text, style) if fit else 0.0
    size = max(MIN_FONT_PT, STYLES[style].size * room / wide) if wide > room else None  # None: the style's own
    return Text(_px(x), _py(y), text, style, ident, "middle", "middle", size)


def _fitted_size(texts, style: str, wide: float) -> float | None:
    """One font size for all ``texts`` in cells ``wide`` cells across: the style's own (None) when all fit,
    else the largest that fits them all, down to MIN_FONT_PT; 0.0 when some would not fit even at that."""
    widest = max((_cells_wide(text, style) for text in texts), default=0.0)
    room = wide * FIT_ROOM
    if widest <= room:
        return None
    size = STYLES[style].size * room / widest
    return size if size >= MIN_FONT_PT else 0.0


def _cell_items(cell: PictureCell, x0: float, top: float, wide: float, fill: str, turned: bool, size=None) -> list:
    """The rectangle and texts of one cell whose left edge is at ``x0``, ``wide`` cells wide, its top at ``top``;
    ``size``: the font size of its value or element index (one per row, so a row's numbers look alike)."""
    ident, middle = f"{cell.strip}:{cell.row}:{cell.index}", x0 + wide / 2
    if cell.row == "storage":  # its index above it, turned upright when too wide
        index_y, turn = _py(top - LABEL_LIFT), 90.0 if turned else 0.0
        above = Text(_px(middle), index_y, f"{cell.index:,}", "index", f"index:{ident}", "middle", "bottom", None, turn)
        items = [_box(x0, top, wide, "storage", f"cell:{ident}"), above]
    elif cell.state == "value":  # the same bytes read as another dtype: a narrower strip
        items = [_box(x0, top, wide, "storage", f"cell:{ident}", VALUE_STRIP_HEIGHT)]
        if cell.text and size != 0.0:
            middle_y = top + VALUE_STRIP_HEIGHT / 2
            items.append(
                Text(_px(middle), _py(middle_y), cell.text, "value", f"text:{ident}", "middle", "middle", size)
            )
        return items
    else:
        style = (fill if cell.state == "read" else cell.state) + "-repeated" * cell.repeated
        items = [_box(x0 + CELL_INSET, top, wide - 2 * CELL_INSET, style, f"cell:{ident}")]
    if not cell.text:
        return items
    if cell.repeated or cell.state == "unknown":  # "×3", "?": their own look, fitted one by one
        style = "count" if cell.repeated else "unchecked"
        return [*items, _centred(middle, top + CELL_HEIGHT / 2, cell.text, style, f"text:{ident}", wide)]
    if size == 0.0:  # this row's numbers do not fit its cells at the smallest size: the grid says them
        return items
    style = "value" if cell.row == "storage" else "ghost-index" if cell.state == "ghost" else "element-index"
    return [
        *items,
        Text(_px(middle), _py(top + CELL_HEIGHT / 2), cell.text, style, f"text:{ident}", "middle", "middle", size),
    ]


def _step_items(step: PictureStep, arrow: tuple, lane: float, row_top: float, label_x: float) -> list:
    """The ticks, arrow (or stride-0 loop) and label of one step, its arrow at height ``lane``."""
    start, end, label = arrow
    bottom, lane = _py(row_top + CELL_HEIGHT), _py(lane)
    ident = f"{step.strip}:{step.row}:{step.dim}"
    if step.stride == 0:
        items = [Arrow(_loop(_px(start), bottom + _py(LOOP_DROP)), "loop", f"step:{ident}")]
    else:
        ticks = (start, end) if step.shown else (start,)  # down from the cells to the arrow
        items = [Line(((_px(x), bottom), (_px(x), lane)), "tick") for x in ticks]
        style = "step" if step.shown else "step-not-shown"
        items.append(Arrow(((_px(start), lane), (_px(end), lane)), style, f"step:{ident}"))
    return items + [Text(_px(label_x), lane, label, "step-text", f"steptext:{ident}", "start", "middle")]


def _grid_title(grid: PictureGrid, counted_in: str = "") -> str:
    """The line above a grid: the tensor's name and its shape as a grid, e.g. 'x: 3×4 grid (i down, j across)';
    above 2-D it says which dims the blocks and their rows and columns are; ``counted_in``: the dtype whose cells
    the grid's numbers count when it is not the strip's (a ``view(torch.uint8)``'s count bytes)."""
    shape = grid.shape
    if not grid.elements:
        return f"{grid.row}: no elements (shape {tuple_text(shape)})"
    if not shape:
        return f"{grid.row}: 0-d, one element"
    if len(shape) == 1:
        return f"{grid.row}: {plural(shape[0], 'element', fmt=',')}"
    sizes = "×".join(f"{size:,}" for size in shape)
    if len(shape) == 2:
        how = "i down, j across"
    else:
        down = len(shape) - 2
        lead = ", ".join(str(d) for d in range(down)) if down <= 3 else f"0–{down - 1}"  # 64 dims: "0–61"
        how = f"blocks by dim{'s' * (down > 1)} {lead}; dim {down} down, dim {down + 1} across"
    unit = f"; numbers count {counted_in} cells" if counted_in else ""
    return f"{grid.row}: {sizes} grid ({how}{unit})"


def _grid_items(
    grid: PictureGrid, fill: str, x: float, y: float, counted_in: str = "", compact: bool = False
) -> tuple[list, float, float, list]:
    """A tensor's grid with its top left at (x, y): its items, width and height (in cells and layout units), and
    ``(element, x of its middle, y of its bottom)`` per drawn element, where a connector to its cell starts.
    ``compact``: the title's "(…)" on a second line, so the grid is narrower."""
    name, shape = grid.row, grid.shape
    title = _grid_title(grid, counted_in)
    title = title.replace(" (", "\n(", 1) if compact and title.endswith(")") else title
    items = [Text(_px(x), _py(y), title, "grid-title", f"gridtitle:{name}")]
    title_h = GRID_TITLE_HEIGHT + title.count("\n") * LINE_UNITS
    width, height, anchors = _cells_wide(items[0].text, "grid-title"), title_h, []
    if not grid.elements:
        return items, width, height, anchors
    first = grid.blocks[0]
    widest = max(_cells_wide(f"{element.storage_index:,}", "element") for element in grid.elements)
    element_w = min(MAX_ELEMENT_WIDTH, max(1.0, widest / FIT_ROOM))
    head_w = max(0.8, _cells_wide(f"{first.rows[-1]}", "grid-head") + 0.4)
    label_h = BLOCK_LABEL_HEIGHT if len(shape) > 2 else 0.0
    element_h = ELEMENT_HEIGHT
    block_w = len(first.columns) * element_w
    block_h = label_h + GRID_HEAD_HEIGHT + len(first.rows) * element_h
    for k, block in enumerate(grid.blocks):
        bx = x + head_w + block.place * (block_w + BLOCK_GAP)
        top = y + title_h + block.line * (block_h + LINE_GAP)
        width = max(width, bx + block_w - x)
        ident = f"{name}:{k}"
        if None in block.lead:
            line_left_out = None in block.lead[:-1]  # a whole line of blocks: one "⋮" stands for it
            if block.place == 0 or not line_left_out:
                mark = "⋮" if line_left_out else "…"
                items.append(_centred(bx + block_w / 2, top + block_h / 2, mark, "elided", f"gridgap:{ident}"))
            continue
        if label_h:
            lead = ", ".join(str(i) for i in block.lead)
            items.append(Text(_px(bx), _py(top), f"[{lead}, :, :]", "grid-head", f"blocklabel:{ident}"))
        head_y = top + label_h + GRID_HEAD_HEIGHT / 2
        for c, j in enumerate(block.columns):
            style, text = ("grid-elided", "…") if j is None else ("grid-head", str(j))
            items.append(_centred(bx + (c + 0.5) * element_w, head_y, text, style, f"colhead:{ident}:{c}"))
        rows_top = top + label_h + GRID_HEAD_HEIGHT
        if block.place == 0 and len(shape) > 1:
            for r, i in enumerate(block.rows):
                style, text = ("grid-elided", "⋮") if i is None else ("grid-head", str(i))
                middle = rows_top + (r + 0.5) * element_h
                items.append(_centred(bx - head_w / 2, middle, text, style, f"rowhead:{ident}:{r}"))
        cuts = [(r, c, i) for r, i in enumerate(block.rows) for c, j in enumerate(block.columns) if None in (i, j)]
        for r, c, i in cuts:  # "⋮" in a left-out row, "…" in a left-out column
            middle = bx + (c + 0.5) * element_w, rows_top + (r + 0.5) * element_h
            items.append(_centred(*middle, "⋮" if i is None else "…", "grid-elided", f"gridcut:{ident}:{r}:{c}"))
        for element in [e for e in grid.elements if e.block == k]:
            left, top_e = bx + element.column * element_w, rows_top + element.row * element_h
            middle, at = left + element_w / 2, f"{name}:{element.position}"
            style, inset = "ghost" if element.past_end else fill, 2 * CELL_INSET
            number_y = top_e + element_h / 2
            items += [
                _box(left + CELL_INSET, top_e + CELL_INSET, element_w - inset, style, f"elem:{at}", element_h - inset),
                _centred(middle, number_y, f"{element.storage_index:,}", "element", f"elemtext:{at}", element_w),
            ]
            anchors.append((element, middle, top_e + element_h - CELL_INSET))
        height = max(height, rows_top + len(block.rows) * element_h - y)
    return items, width, height, anchors


def _passes_through(start: tuple, end: tuple, box: tuple) -> bool:
    """Whether the segment from ``start`` to ``end`` passes through the inside of ``box`` (``(x, y, w, h)``)."""
    (x0, y0), (x1, y1) = start, end
    dx, dy = x1 - x0, y1 - y0
    (bx, by, bw, bh), low, high = box, 0.0, 1.0  # Liang-Barsky: the part of the segment inside the box
    for p, q in ((-dx, x0 - bx), (dx, bx + bw - x0), (-dy, y0 - by), (dy, by + bh - y0)):
        if p == 0:
            if q <= 0:
                return False
        elif p < 0:
            low = max(low, q / p)
        else:
            high = min(high, q / p)
    return high - low > 1e-9


def _ruler_items(strip: PictureStrip, x_at, y: float) -> list:
    """Byte offsets under a storage strip: a comb with a short tooth per byte (so a float64 cell spans 8, a float32
    cell 4), a long tick at every cell's edge, and byte numbers where they fit."""
    windows = [(begin, stop) for kind, begin, stop in strip.pieces if kind == "cells"]
    widest = _cells_wide(f"{windows[-1][1]:,}", "ruler-text")  # the last byte number
    every = max(1, math.ceil(widest / (strip.itemsize / strip.unit_bytes * FIT_ROOM)))  # cells per number
    items, top, tooth, tick = [], _py(y), _py(y + RULER_TICK / 2), _py(y + RULER_TICK)
    for begin, stop in windows:
        teeth = [_px(x_at(byte)) for byte in range(begin, stop + 1)]
        comb = tuple(point for x in teeth for point in ((x, top), (x, tooth), (x, top)))
        items.append(Line(comb, "ruler", f"bytes:{strip.index}:{begin}"))
        for k, byte in enumerate(range(_align_up(begin, strip.itemsize), stop + 1, strip.itemsize)):
            x = _px(x_at(byte))
            items.append(Line(((x, top), (x, tick)), "ruler"))
            if k == 0 or (byte % (every * strip.itemsize) == 0 and k >= every):  # none crowds the first
                items.append(Text(x, tick, f"{byte:,}", "ruler-text", f"ruler:{strip.index}:{byte}", "middle"))
    return items


def _shifted(item, dx: float, dy: float):
    """``item`` moved ``dx``, ``dy`` points (built directly: ``dataclasses.replace`` costs an explorer update
    about a millisecond)."""
    if isinstance(item, Text):
        return Text(item.x + dx, item.y + dy, *(getattr(item, name) for name in _TEXT_REST))
    if isinstance(item, Rect):
        return Rect(item.x + dx, item.y + dy, item.w, item.h, item.style, item.id)
    return type(item)(tuple((x + dx, y + dy) for x, y in item.points), item.style, item.id)


_TEXT_REST = ("text", "style", "id", "anchor", "baseline", "size", "rotation")  # Text's fields after x and y


def _strip_block(picture: LayoutPicture, strip: PictureStrip, fills: dict, rows: dict, grids: dict, compact=False):
    """One storage's part of the picture, its top left at (0, 0): from the top its tensors' grids (2-D and up),
    connectors from small grids' elements to the indices they read, the storage indices and strip, the byte ruler,
    a narrower strip per other dtype read, the strip's title, and one row per tensor with its step arrows.

    Returns ``(groups of items: heads, grids, cells, labels, steps; width and height in cells and layout units;
    gutter width)``: the gutter left of x = 0 holds the short labels "index", "storage", "bytes" in place.
    ``compact``: the heading's parts, row labels and grid titles wrap onto more lines, so storages fit side by
    side. The returned ``top`` is the storage strip's, so blocks side by side can line their strips up.
    """
    lines = LINE_UNITS if compact else 0.0  # the height each further line of a title or label adds
    title = strip.heading or strip.description
    title = title.replace(" · ", "\n") if compact else title
    x_at, gaps, strip_width = _across(strip)
    heads, grid_items, cells, labels, steps = [], [], [], [], []
    width = max(strip_width, _cells_wide(title, "strip-title"))
    last_index = f"{max((end - 1) // strip.itemsize for kind, _, end in strip.pieces if kind == 'cells'):,}"
    turned = _cells_wide(last_index, "index") > strip.itemsize / strip.unit_bytes * TURN_INDICES_AT
    index_h = INDEX_GAP + (TURNED_CHAR * len(last_index) + TURNED_PAD if turned else INDEX_HEIGHT)
    # Each tensor's grid above the storage: side by side, in lines no wider than the strip or GRID_BAND cells, so
    # many views of a big storage do not widen the picture. 1-D and 0-d tensors have none: their row is the grid.
    x, line_top, line_h, band_w = 0.0, GRID_GAP, 0.0, max(strip_width, GRID_BAND)
    placed = []  # (grid, anchors, line top)
    for name in strip.rows:
        if not _drawn(grids[name]):
            continue
        row_dtype = rows[name].layout.dtype
        counted_in = dtype_name(row_dtype) if rows[name].layout.itemsize != strip.itemsize else ""
        drawn, grid_w, grid_h, anchors = _grid_items(grids[name], fills[name], x, line_top, counted_in, compact)
        if x > 0 and x + grid_w > band_w:
            x, line_top, line_h = 0.0, line_top + line_h + GRID_LINE_GAP, 0.0
            drawn, grid_w, grid_h, anchors = _grid_items(grids[name], fills[name], x, line_top, counted_in, compact)
        grid_items += drawn
        placed.append((grids[name], anchors, line_top, (x, line_top, grid_w, grid_h)))
        width = max(width, x + grid_w)
        x, line_h = x + grid_w + PANEL_GAP, max(line_h, grid_h)
    # Small grids on the line just above the strip get a thin line from each element to the index it reads.
    last_line = [(grid, anchors, box) for grid, anchors, at, box in placed if at == line_top]
    # Only when every grid of that line is small: past a few elements the lines are a tangle, and the grid's
    # numbers already name the storage index each element reads.
    # Only from a grid of one row of elements, so that each line starts at its element's bottom edge with no
    # cell under it (a line from an upper row would pass behind the rows below it, or start beside its grid).
    connected = (
        last_line
        if all(
            len(anchors) <= CONNECT_MAX and len({round(ey, 6) for _, _, ey in anchors}) <= 1
            for _, anchors, _ in last_line
        )
        else []
    )
    band = line_top + line_h + GRID_GAP if placed else 0.0
    top = band + (CONNECT_ROOM if connected else 0.0) + index_h  # the storage strip's, under its indices
    index_top = top - index_h + INDEX_GAP / 2
    boxes, links = [box for _, _, box in connected], []
    for grid, anchors, box in connected:
        itemsize = rows[grid.row].layout.itemsize
        for element, ex, ey in anchors:
            cx = None if element.past_end else x_at(element.storage_index * itemsize)
            if cx is None:  # past the end or elided: no index to point at
                continue
            cx += itemsize / strip.unit_bytes / 2
            ident = f"connector:{grid.row}:{element.position}"
            links.append(((ex, ey), (cx, index_top), box, ident))
    # A line that would pass behind a neighbouring grid could not be followed: then no grid on the line gets any.
    if not any(_passes_through(a, b, other) for a, b, own, _ in links for other in boxes if other is not own):
        heads.extend(Line(((_px(a[0]), _py(a[1])), (_px(b[0]), _py(b[1]))), "connector", i) for a, b, _, i in links)
    elif connected:  # no lines after all: no room kept for them
        top = band + index_h
        index_top = top - index_h + INDEX_GAP / 2
    gutter = [
        ("index", top - LABEL_LIFT - (index_h - INDEX_GAP) / 2),
        ("storage", top + CELL_HEIGHT / 2),
        ("bytes", top + CELL_HEIGHT + RULER_TICK + 0.2),
    ]
    heads += _ruler_items(strip, x_at, top + CELL_HEIGHT)
    width = max(width, strip_width + _cells_wide(f"{strip.pieces[-1][2]:,}", "ruler-text") / 2)  # the last byte
    y = top + CELL_HEIGHT + RULER_HEIGHT
    if strip.sources:  # a copy: under each cell, the index of the source's cell whose value it holds
        middle_y = y + SOURCE_ROW_HEIGHT / 2
        gutter.append((f"from {strip.source_row}", middle_y))
        wide = strip.itemsize / strip.unit_bytes
        for at, source in strip.sources:
            x0 = x_at(at * strip.itemsize)
            ident = f"source:{strip.index}:{at}"
            heads.append(_centred(x0 + wide / 2, middle_y, f"{source:,}", "source", ident, wide))
        y += SOURCE_ROW_HEIGHT
    row_y = {"storage": top}  # each row's top
    value_rows = list(dict.fromkeys(c.row for c in picture.cells if c.strip == strip.index and c.state == "value"))
    for name in [n for n in value_rows if n != "storage"]:  # the same bytes as another dtype: a narrower strip
        y += VALUE_STRIP_GAP
        row_y[name] = y
        gutter.append((name.removeprefix("storage "), y + VALUE_STRIP_HEIGHT / 2))
        y += VALUE_STRIP_HEIGHT
    y += TITLE_GAP  # the storage's title under it, at the strip it names
    heads.append(Text(_px(0), _py(y), title, "strip-title", f"strip:{strip.index}"))
    y += TITLE_HEIGHT - TITLE_RAISE + title.count("\n") * lines * palette.TITLE_PT / FONT_PT
    wrap_at = max(width, COMPACT_LABEL)  # compact: labels wrap to the block's width so far
    for name in strip.rows:
        row = rows[name]
        label = _wrapped(row.label, name, wrap_at) if compact else row.label
        width = max(width, _cells_wide(label, "label"))
        y += LABEL_HEIGHT + label.count("\n") * lines
        row_y[name] = y
        label_y = _py(y - LABEL_LIFT)
        labels.append(Text(_px(0), label_y, label, "label", f"label:{strip.index}:{name}", baseline="bottom"))
        y += CELL_HEIGHT
        # Shortest jump nearest the row: arrows sharing a start then nest without crossing ticks.
        lanes, right, row_steps = {}, 0.0, [step for step in picture.steps if step.row == name]
        for step in sorted(row_steps, key=lambda s: abs(s.to_index - s.from_index)):
            y += LANE_HEIGHT
            arrow = _arrow(step, strip, row.layout.itemsize, x_at)
            if arrow is not None:  # None: the row's first cell is elided, its label still gives the strides
                lanes[step.dim] = (arrow, y)
                right = max(right, arrow[0] + ARROW_ROOM, arrow[1] if arrow[1] is not None else 0.0)
        labels_wide = [_cells_wide(arrow[2], "step-text") for arrow, _ in lanes.values()]
        width = max(width, right + LABEL_PAD + max(labels_wide, default=0.0))
        # Labels in one column right of every arrow of the row: no tick line crosses a label.
        for step in [step for step in row_steps if step.dim in lanes]:
            steps += _step_items(step, *lanes[step.dim], row_y[name], right + LABEL_PAD)
        y += ROW_PAD
    for x0, x1, hidden in gaps:
        middle, ident = (x0 + x1) / 2, f"{strip.index}:{x0:g}"
        heads.append(_box(x0 + GAP_INSET, top, x1 - x0 - 2 * GAP_INSET, "gap", f"gap:{ident}"))
        text = f"… {hidden:,} cells\nnot shown …"
        heads.append(_centred(middle, top + CELL_HEIGHT / 2, text, "gap-text", f"gaptext:{ident}"))
        heads += [_centred(middle, row_y[name] + CELL_HEIGHT / 2, "…", "elided") for name in strip.rows]
    ghost_x = strip_width + GHOST_GAP  # past the storage's end: right of the strip, a little apart
    mine = [cell for cell in picture.cells if cell.strip == strip.index]
    sizes, bare = {}, set()  # one font size per row for its values or element indices: its numbers look alike
    for name in ["storage", *value_rows, *strip.rows]:
        plain = [c for c in mine if c.row == name and c.text and not c.repeated and c.state != "unknown"]
        values = _holds_values(name)
        style = "value" if values else "element-index"
        fitted = [_fitted_size([c.text], style, c.nbytes / strip.unit_bytes) for c in plain]
        if 0.0 in fitted and not values and len(rows[name].layout.shape) > 2:  # [1,0,2] too wide: 1,0,2
            unbracketed = [_fitted_size([_unbracketed(c.text)], style, c.nbytes / strip.unit_bytes) for c in plain]
            if 0.0 not in unbracketed:
                fitted = unbracketed
                bare.add(name)
        if 0.0 in fitted:  # values shrink to the smallest size; element indices are left to the grid
            sizes[name] = MIN_FONT_PT if values else 0.0
        elif any(size is not None for size in fitted):
            sizes[name] = min(size for size in fitted if size is not None)
    for cell in mine:
        wide = cell.nbytes / strip.unit_bytes
        if cell.state == "ghost":
            x0 = ghost_x + (cell.byte_start - strip.pieces[-1][2]) / strip.unit_bytes
            width = max(width, x0 + wide)
        else:
            x0 = x_at(cell.byte_start)
        if cell.row in bare:
            cell = replace(cell, text=_unbracketed(cell.text))
        cells += _cell_items(cell, x0, row_y[cell.row], wide, fills.get(cell.row, ""), turned, sizes.get(cell.row))
    # A row reading past the end of the storage (each row counts in its own dtype: a float32 tensor and its
    # view(torch.uint8) read the same bytes, 4 and 16 cells of them).
    beyond = [rows[n].layout for n in strip.rows if rows[n].layout.numel]
    beyond = [lay for lay in beyond if lay.index_range[1] >= lay.storage_numel]
    if beyond:  # a setting torch refuses: say where it reaches
        reach, cells_in_all = beyond[0].index_range[1], beyond[0].storage_numel
        text = f"past the end of the storage ({cells_in_all:,} cells):\nreaches index {reach:,}, torch refuses"
        heads.append(Text(_px(ghost_x), _py(top + 0.1), text, "ghost-text", f"ghosttext:{strip.index}"))
        width = max(width, ghost_x + _cells_wide(text, "ghost-text"))
    gutter_w = max(_cells_wide(text, "gutter") for text, _ in gutter) + GUTTER_PAD
    for text, middle in gutter:
        ident = f"gutter:{strip.index}:{text}"
        heads.append(Text(_px(-GUTTER_PAD), _py(middle), text, "gutter", ident, "end", "middle"))
    return (heads, grid_items, cells, labels, steps), width, y, gutter_w, top


def _wrapped(label: str, name: str, wide: float) -> str:
    """A row's label on lines no wider than ``wide`` cells where it can, broken only between its parts: the name,
    where it reads ("shape (6,)  stride (1,)  offset 0"), and the rest ("float32  ·  contiguous")."""
    rest = label.removeprefix(f"{name}: ")
    where, _, after = rest.partition("  ·  ")
    parts = [(f"{name}:", ""), (where, " "), (after, "  ·  ")] if rest != label else [(where, ""), (after, "  ·  ")]
    lines, line = [], ""
    for part, sep in [(part, sep) for part, sep in parts if part]:
        if line and _cells_wide(line + sep + part, "label") > wide:
            lines.append(line)
            line = part
        else:
            line += sep + part if line else part
    return "\n".join([*lines, line])


def _unbracketed(text: str) -> str:
    """An element's index without its brackets (``[1,0,2]`` as ``1,0,2``); a count (``×3``) as it is."""
    return text[1:-1] if text.startswith("[") else text


def _holds_values(row: str) -> bool:
    """Whether a row of cells holds values (a storage strip, or its bytes read as another dtype)."""
    return row.startswith("storage")


def _lined_up(blocks: list) -> list:
    """Blocks to stand side by side, their strips on one line: a block after the first drops its in-place labels
    ("index", "storage", "bytes") when they are only those three, as the first block's label its line too; a
    copy's block keeps "bytes" above its own "from x" row."""
    result = blocks[:1]
    for (heads, *rest), width, height, gutter, top in blocks[1:]:
        labels = [item for item in heads if getattr(item, "id", "").startswith("gutter:")]
        own = [item for item in labels[3:] if item.text.startswith("from ")]  # a copy's "from x": its own row
        if len(labels) == 3 + len(own):  # no narrower strip of another dtype, whose label only this block has
            # A copy's "from x" row keeps "bytes" over it: two unlabelled rows of numbers read as one (review 4).
            dropped = labels[:2] if own else labels[:3]
            heads = [item for item in heads if item not in dropped]
            kept = [item for item in labels if item not in dropped]
            gutter = max((_cells_wide(item.text, "gutter") + GUTTER_PAD for item in kept), default=0.0)
        result.append(((heads, *rest), width, height, gutter, top))
    return result


def layout_scene(picture: LayoutPicture) -> Scene:
    """The drawing of a ``LayoutPicture`` as a ``Scene``, in points; both renderers draw it.

    Per storage (side by side when they fit ``SIDE_BY_SIDE`` cells across, else one under another): each tensor
    of 2 or more dims as a grid (``elem:<row>:<position>`` for element rectangles, ``elemtext:…`` for the
    storage index in them, ``gridtitle:<row>``, ``rowhead:…``/``colhead:…``/``blocklabel:…`` headers), thin
    ``connector:<row>:<position>`` lines from a small grid's elements to the indices they read, the storage strip
    with its indices above and a byte ruler under it (``ruler:<strip>:<byte>``), a narrower strip per other dtype
    read (``cell:<strip>:storage as uint8:<index>``), the storage's title (``strip:<strip>``), and one row per
    tensor whose cells name the element reading them (``[1,0]``; ``×n`` when several do). Short labels stand
    in place left of the strip (``gutter:<strip>:index``, ``…:storage``, ``…:bytes``): there is no sentence
    legend (``LayoutPicture.notes`` keeps it, for help texts). Every cell's rectangle and texts carry ids
    naming it: ``cell:<strip>:<row>:<index>``, ``text:…``, ``index:…`` (storage cells); also
    ``label:<strip>:<row>``, ``step:<strip>:<row>:<dim>``, ``steptext:…``, ``gap:<strip>:<x>``, ``gaptext:…``
    and ``ghosttext:<strip>``. The title is the picture's summary.

    Raises:
        TypeError: ``picture`` is not a LayoutPicture (from ``layout_picture``).
    """
    require_type(picture, LayoutPicture, "picture", "a LayoutPicture")
    fills = {row.name: f"row{i % len(ROW_FILLS)}" for i, row in enumerate(picture.rows)}
    rows = {row.name: row for row in picture.rows}
    grids = {grid.row: grid for grid in picture.grids}
    blocks = [_strip_block(picture, strip, fills, rows, grids) for strip in picture.strips]
    side_by_side = False
    gutter = _cells_wide("storage", "gutter") + GUTTER_PAD  # the least a block's gutter takes
    strips_alone = gutter + sum(_across(strip)[2] for strip in picture.strips) + STRIP_GAP_ACROSS * (len(blocks) - 1)
    if len(blocks) > 1 and strips_alone <= SIDE_BY_SIDE:  # side by side when they fit, titles and labels wrapped
        compact = [_strip_block(picture, strip, fills, rows, grids, compact=True) for strip in picture.strips]
        compact = _lined_up(compact)
        across = sum(gutter + width for _, width, _, gutter, _ in compact) + STRIP_GAP_ACROSS * (len(blocks) - 1)
        side_by_side = across <= SIDE_BY_SIDE
        blocks = compact if side_by_side else blocks
    groups, x, y, width, height = [[] for _ in range(5)], 0.0, TOP_MARGIN, 0.0, 0.0
    lowest = max(top for *_, top in blocks)
    for parts, block_w, block_h, gutter, top in blocks:
        drop = lowest - top if side_by_side else 0.0  # side by side, the storage strips stand on one line
        dx, dy = (x + gutter) * CELL_PT, (y + drop) * ROW_PT
        for group, items in zip(groups, parts):
            group += [_shifted(item, dx, dy) for item in items]
        width, height = max(width, x + gutter + block_w), max(height, y + drop + block_h)
        if side_by_side:
            x += gutter + block_w + STRIP_GAP_ACROSS
        else:
            y += block_h + STRIP_GAP
    items = tuple(item for group in groups for item in group)
    return Scene((width + 2 * SIDE_MARGIN) * CELL_PT, _py(height + STRIP_GAP), items, STYLES, picture.summary)


def picture_svg(picture: LayoutPicture) -> str:
    """``layout_scene(picture)`` as a standalone SVG document: the drawing ``draw_layout`` renders, with the same
    ids and the summary as ``<title>``, as text a browser shows at once (what the live explorers display).

    Raises:
        TypeError: ``picture`` is not a LayoutPicture.
    """
    return svg(layout_scene(picture))


def draw_layout(*tensors, names=None, ax=None, max_cells: int = 64, show_values: bool = True):
    """Draw tensors over their storage: each tensor's grid, the storage as a strip of cells, one row per tensor.

    Each number has one meaning: a grid's numbers are storage indices, the strip's are values, a row's name
    elements. Each tensor of 2 or more dims is drawn as a grid of its shape (blocks by its leading dims above
    2-D, big grids cut with "…"), element ``t[i, j]`` in its tensor's colour with the storage index it reads
    written in it; a grid of one row of at most 6 elements gets a thin line from each element to that index.
    1-D and 0-d tensors get no grid (their row says the same). Short labels stand left of the strip ("index",
    "storage", "bytes"); the storage's title is under its byte ruler (a tooth per byte, a number per cell edge).
    Each row highlights the cells its tensor reads, each naming the element that reads it (``[1,0]``; above 2-D
    ``1,0,2`` when the brackets do not fit; left out when that does not fit either); a cell read by several
    elements (``expand`` with stride 0) shows ``×n`` and is hatched; arrows under the row show one step along
    each dimension (stride k = a jump of k cells). Tensors over one storage share a strip, so sharing and
    non-overlap are visible; a tensor with its own storage gets a separate strip under a short heading
    ("storage 2: … · not shared with storage 1", or "shares memory with storage 1" where two storage objects
    cover overlapping bytes, each storage compared by its bytes with every earlier one; the summary says it in
    full), beside the first, the strips on one line, when they fit about 1,040 px. Rows whose itemsizes differ
    (``view(torch.uint8)``) are drawn per byte so byte extents line up, and the bytes' values in that dtype get a
    second, narrower strip. A storage longer than ``max_cells`` cells is drawn as windows around the region
    the tensors use, with "… N cells not shown …" markers, so a 10^8-element tensor draws instantly and stays
    narrow (each tensor's first cells are always shown); grids too wide for one line wrap onto the next.

    Args:
        *tensors, names, max_cells, show_values: as ``layout_picture``.
        ax: a matplotlib Axes to draw into, or None for a new figure sized to fit.

    Returns:
        The matplotlib Figure, with ``fig.summary`` (one line of text, as ``layout_summary``; a notebook shows it as
        the figure's text/plain, so a cell need not print it), ``fig.layout_picture``
        (the ``LayoutPicture`` drawn) and ``fig.scene`` (the ``Scene`` drawn, see ``layout_scene``).

    Raises:
        TypeError, ValueError: as ``layout_picture`` (``ax`` is checked too).
    """
    require_axes(ax)
    picture = layout_picture(*tensors, names=names, max_cells=max_cells, show_values=show_values)
    scene = layout_scene(picture)
    fig = with_summary(render(scene, ax=ax), picture.summary)
    fig.layout_picture, fig.scene = picture, scene
    return fig
