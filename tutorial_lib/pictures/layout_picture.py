"""Pictures of where tensors' elements live: a strip of storage cells, and one row per tensor below it.

A picture is planned as plain data first (``layout_picture``): which storage cells are shown, which
elements read each cell, where one step along each dimension lands, and a one-line summary. The plan is
built only from the model layer (``layout``, ``Layout.index_of``, ``same_storage``, ``shares_memory``)
plus the storage's values; ``draw_layout`` renders it with matplotlib and nothing else. Tests compare
the plan, and the artists drawn from it, with torch's own indexing.

matplotlib is imported inside the drawing functions, so importing this module stays cheap.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
import torch

from ..common.checks import describe, require_bool, require_positive_int, require_tensor
from ..facts.storage import Layout, layout, row_major_indices, same_storage, shares_memory
from .render_mpl import bare_figure, require_axes

#: How many elements (row-major) of each tensor are listed by ``layout`` for a picture. Cells read only
#: by elements past the listing are drawn as "?" (not checked), never guessed.
MAX_LISTED = 16_384
#: For a tensor longer than ``MAX_LISTED``, also this many of its last elements are looked up (with
#: ``Layout.index_of``), so the end of a big tensor's region is drawn exactly too.
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

# Drawing sizes, in inches per cell (horizontal) and per layout unit (vertical).
_CELL_IN = 0.34
_ROW_IN = 0.34
_FONT_PT = 8.0
# Light fills for the rows (Okabe-Ito hues, lightened). Colour is never the only cue: read cells also
# carry the element's number and a solid border, unread cells a dotted one, repeats a count and hatching.
_ROW_FILLS = ("#a6cee3", "#fdbf6f", "#b2df8a", "#cab2d6", "#fb9a99", "#ffff99", "#8dd3c7", "#bebada")
_STORAGE_FILL = "#e6e6e6"
_UNKNOWN_FILL = "#f2f2f2"


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
    from_tensor: bool


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


def _dtype_name(dtype: torch.dtype) -> str:
    return str(dtype).removeprefix("torch.")


def _format_value(value) -> str:
    """A storage value as short cell text: 3 significant digits, whole floats without a point."""
    if isinstance(value, bool):
        return "T" if value else "F"
    if isinstance(value, int):
        return str(value)
    if isinstance(value, complex):
        return f"{value.real:.2g}{value.imag:+.2g}j"
    if isinstance(value, float):
        if math.isfinite(value) and value.is_integer() and abs(value) < 1e7:
            return str(int(value))
        return f"{value:.3g}"
    return str(value)


def storage_values_text(t, start: int = 0, stop: int | None = None, max_cells: int = 64) -> tuple[str, ...]:
    """Read storage cells ``start`` up to ``stop`` of ``t``'s storage (in ``t``'s dtype) as short text.

    This reads the raw storage, whatever ``t``'s own shape and strides are, and never more than
    ``max_cells`` values, so it is cheap for any storage size.

    Args:
        t: a strided tensor; its storage is read as elements of ``t.dtype``. A meta tensor has no values:
            its cells read as empty strings.
        start: the first storage index (in elements of ``t.dtype``).
        stop: one past the last storage index; None for the end of the storage.
        max_cells: read at most this many values (from ``start``).

    Returns:
        A tuple of strings, one per value read, e.g. ``('0', '1', '2.5')``.

    Raises:
        TypeError: ``t`` is not a tensor, or ``start``/``stop``/``max_cells`` are not ints.
        ValueError: the range is outside the storage, or ``max_cells`` < 1.
    """
    tensor = require_tensor(t, "t")
    require_positive_int(max_cells, "max_cells")
    storage_numel = tensor.untyped_storage().nbytes() // tensor.element_size()
    if stop is None:
        stop = storage_numel
    for name, value in (("start", start), ("stop", stop)):
        if isinstance(value, bool) or not isinstance(value, int):
            raise TypeError(f"{name} must be an int, got {describe(value)}")
    if not 0 <= start <= stop <= storage_numel:
        raise ValueError(
            f"start and stop must satisfy 0 <= start <= stop <= {storage_numel} (the storage's size in "
            f"{_dtype_name(tensor.dtype)} elements), got start={start}, stop={stop}"
        )
    count = min(stop - start, max_cells)
    if count == 0:
        return ()
    if tensor.device.type == "meta":
        return ("",) * count
    # A fresh tensor set onto the raw storage: t's own view bits (conj, neg) and autograd play no part.
    window = torch.empty(0, dtype=tensor.dtype, device=tensor.device)
    window.set_(tensor.untyped_storage(), start, (count,), (1,))
    try:
        values = window.cpu().tolist()
    except (RuntimeError, TypeError):  # quantized and other dtypes without Python values
        return ("?",) * count
    return tuple(_format_value(v) for v in values)


def _check_names(names, count: int) -> list[str]:
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


def _listed_positions(lay: Layout, visible: set[int]) -> dict[int, list[int]]:
    """``{storage index: [row-major positions]}`` for the listed elements that land in ``visible``."""
    found: dict[int, list[int]] = {}
    if lay.numel == 0 or not visible:
        return found
    if all(-(2**63) <= i < 2**63 for i in (min(lay.element_indices), max(lay.element_indices))):
        indices = np.asarray(lay.element_indices, dtype=np.int64)
        wanted = np.fromiter(sorted(visible), dtype=np.int64)
        for position in np.nonzero(np.isin(indices, wanted))[0].tolist():
            found.setdefault(int(indices[position]), []).append(position)
    else:  # indices past int64 (a meta tensor with huge strides): plain Python ints
        for position, index in enumerate(lay.element_indices):
            if index in visible:
                found.setdefault(index, []).append(position)
    if lay.indices_truncated:
        # The end of a long tensor: its last elements, looked up with the model's address formula.
        first_tail = max(len(lay.element_indices), lay.numel - TAIL_LISTED)
        tail = row_major_indices(lay.shape, lay.stride, lay.storage_offset, first_tail, lay.numel)
        for offset, storage_index in enumerate(tail):
            if storage_index in visible:
                found.setdefault(storage_index, []).append(first_tail + offset)
    return found


def _row_cells(strip_no: int, member: _Member, pieces) -> list[PictureCell]:
    lay = member.layout
    size = lay.itemsize
    slots = list(_slots(pieces, size))
    found = _listed_positions(lay, set(slots))
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
    lay = member.layout
    if lay.numel == 0 or lay.ndim == 0:
        return []
    origin = lay.index_of(*([0] * lay.ndim))
    steps = []
    for dim, size in enumerate(lay.shape):
        if size < 2:
            continue  # a dimension of size 1 is never stepped along: its stride does not matter
        target = lay.index_of(*(1 if d == dim else 0 for d in range(lay.ndim)))
        shown = origin in visible and target in visible
        steps.append(PictureStep(strip_no, member.name, dim, lay.stride[dim], origin, target, shown))
    return steps


def _shape_text(shape) -> str:
    return "(" + ", ".join(str(s) for s in shape) + ("," if len(shape) == 1 else "") + ")"


def _row_label(member: _Member) -> str:
    lay = member.layout
    contiguous = "contiguous" if lay.is_contiguous else "not contiguous"
    return (
        f"{member.name}: shape {_shape_text(lay.shape)}  stride {_shape_text(lay.stride)}  "
        f"offset {lay.storage_offset}  ·  {_dtype_name(lay.dtype)}  ·  {contiguous}"
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
    counts = np.unique(np.asarray(lay.element_indices), return_counts=True)[1]
    low, high = int(counts.min()), int(counts.max())
    often = f"each {high} times" if low == high else f"{low} to {high} times each"
    zero = any(step == 0 and size > 1 for size, step in zip(lay.shape, lay.stride))
    return often + (" (stride 0 repeats them)" if zero else "")


def _byte_set(lay: Layout) -> set[int]:
    size = lay.itemsize
    return {index * size + b for index in set(lay.element_indices) for b in range(size)}


def _relation(member: _Member, first: _Member) -> str | None:
    """How a row's cells relate to the strip's first row, from the listings or ``shares_memory``."""
    lay, base = member.layout, first.layout
    if lay.numel == 0 or base.numel == 0:
        return None
    complete = not lay.indices_truncated and not base.indices_truncated
    if complete and lay.itemsize == base.itemsize:
        mine, theirs = set(lay.element_indices), set(base.element_indices)
        if mine == theirs:
            if lay.numel != len(mine):
                return f"reads the same {len(mine):,} cells as {first.name}, {_repeat_text(lay)}"
            order = "same" if lay.element_indices == base.element_indices else "a different"
            return f"reads the same {len(mine):,} cells as {first.name} in {order} order"
        common = len(mine & theirs)
        if not common:
            return f"shares no cell with {first.name} (same storage, no overlap)"
        if mine < theirs:
            return f"{common:,} of {first.name}'s {len(theirs):,} cells"
        if theirs < mine:
            return f"all {len(theirs):,} of {first.name}'s cells and {len(mine) - common:,} more"
        return f"{common:,} of them also read by {first.name}"
    if complete and lay.numel * lay.itemsize <= 1 << 16 and base.numel * base.itemsize <= 1 << 16:
        mine, theirs = _byte_set(lay), _byte_set(base)
        if mine == theirs:
            return f"reads the same {len(mine):,} bytes as {first.name}"
        common = len(mine & theirs)
        if not common:
            return f"shares no byte with {first.name} (same storage, no overlap)"
        if mine < theirs:
            return f"{common:,} of {first.name}'s {len(theirs):,} bytes"
        return f"{common:,} of its {len(mine):,} bytes are also read by {first.name}"
    if member.tensor is not None and first.tensor is not None:
        if shares_memory(member.tensor, first.tensor):
            return f"shares memory with {first.name}"
        return f"shares no memory with {first.name} (same storage, no overlap)"
    return None


def _row_description(member: _Member, first: _Member | None, strip_itemsize: int, strip_dtype) -> str:
    lay = member.layout
    in_bytes = lay.itemsize != strip_itemsize
    head = f"{member.name}: shape {_shape_text(lay.shape)} stride {_shape_text(lay.stride)} offset {lay.storage_offset}"
    if lay.dtype != strip_dtype:
        head += f" as {_dtype_name(lay.dtype)} ({lay.itemsize} byte{'' if lay.itemsize == 1 else 's'} each)"
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
    names = _check_names(names, len(tensors))
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
        strip_dtype, strip_size = first.layout.dtype, first.layout.itemsize
        sizes = [m.layout.itemsize for m in group]
        unit = math.gcd(*sizes)
        align = math.lcm(*sizes)
        nbytes = first.layout.storage_nbytes
        total = _align_down(nbytes, align)
        budget = max(align, _align_down(max_cells * unit, align))
        pieces = _pieces(_windows(group, total, budget, align, unit), total)

        numel = nbytes // strip_size
        description = f"storage of {numel:,} {_dtype_name(strip_dtype)} ({nbytes:,} bytes)"
        if any(kind == "gap" for kind, _, _ in pieces):
            description += f", {_shown_text(pieces, strip_size)}"
        if strip_no > 0 and (first.tensor is None or groups[0][0].tensor is None):
            description += " (a Layout does not say which storage it is over: drawn apart)"
        elif strip_no > 0:
            description = f"{description}, separate from {groups[0][0].name}'s (not shared)"
        if len(group) > 1 and any(m.tensor is None for m in group):
            description += " (Layouts drawn on one strip because their storage sizes match)"
        strips.append(
            PictureStrip(
                strip_no,
                strip_dtype,
                strip_size,
                unit,
                numel,
                nbytes,
                pieces,
                tuple(m.name for m in group),
                description,
            )
        )

        storage_slots = list(_slots(pieces, strip_size))
        values: dict[int, str] = {}
        if show_values and holder is not None and storage_slots:
            source = holder.tensor
            if holder.layout.dtype != strip_dtype:
                # Read the raw storage as the strip's dtype (a view(dtype) of the tensor may not exist).
                source = torch.empty(0, dtype=strip_dtype, device=source.device).set_(source.untyped_storage())
            for kind, begin, end in pieces:
                if kind == "cells":
                    lo, hi = _align_up(begin, strip_size) // strip_size, end // strip_size
                    values.update(zip(range(lo, hi), storage_values_text(source, lo, hi, max_cells=hi - lo or 1)))
        for index in storage_slots:
            cells.append(
                PictureCell(
                    strip_no, "storage", index, index * strip_size, strip_size, "value", (), True, values.get(index, "")
                )
            )

        row_parts = []
        for member in group:
            row_cells = _row_cells(strip_no, member, pieces)
            cells.extend(row_cells)
            any_unknown |= any(c.state == "unknown" for c in row_cells)
            any_repeat |= any(len(c.positions) > 1 or not c.count_exact for c in row_cells if c.state == "read")
            any_unread |= any(c.state == "unread" for c in row_cells)
            steps.extend(_steps(strip_no, member, set(_slots(pieces, member.layout.itemsize))))
            text = _row_description(member, first if member is not first else None, strip_size, strip_dtype)
            row_parts.append(text)
            rows.append(
                PictureRow(strip_no, member.name, _row_label(member), text, member.layout, member.tensor is not None)
            )
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
# One drawing routine (``_render``) emits rectangles, texts, lines and arrows in picture coordinates
# (x in cells, y in layout units downward) to a small canvas: ``_MatplotlibCanvas`` makes artists for
# ``draw_layout``; ``_SvgCanvas`` writes SVG text for live widgets, where rasterising a matplotlib
# figure on every change is too slow (measured in benchmarks/bench_explorers.py).


@dataclass
class _Geometry:
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


def _text_cells(text: str, points: float) -> float:
    """Roughly how many cells wide a line of text is (DejaVu Sans averages ~0.6 em per character)."""
    return len(text) * points * 0.6 / 72 / _CELL_IN


def _geometry(picture: LayoutPicture) -> _Geometry:
    x_of, gaps, header_y, strip_y, index_rotated = [], [], [], [], []
    row_y, lanes, arrows, label_x = {}, {}, {}, {}
    width = 0.0
    y = 0.2
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
        width = max(width, cursor, _text_cells(strip.description, _FONT_PT + 1))
        last_index = max((end - 1) // strip.itemsize for kind, _, end in strip.pieces if kind == "cells")
        rotated = _text_cells(f"{last_index:,}", 6.5) > strip.itemsize / unit * 0.9
        index_rotated.append(rotated)
        y += 0.9
        header_y.append(y - 0.2)
        y += 0.35 + (0.2 * len(f"{last_index:,}") + 0.2 if rotated else 0.45)  # index labels
        strip_y.append(y)
        y += 1.0
        for name in strip.rows:
            width = max(width, _text_cells(labels[name], _FONT_PT))
            y += 0.95
            row_y[name] = y
            y += 1.0
            # Shortest jump nearest the row: arrows sharing a start then nest without crossing ticks.
            right = None
            for step in sorted(steps_by_row.get(name, []), key=lambda s: abs(s.to_index - s.from_index)):
                y += 0.75
                lanes[(name, step.dim)] = y
                arrow = _arrow(step, strip, itemsizes[name], x_at)
                arrows[(name, step.dim)] = arrow
                if arrow is not None:
                    right = max(right or 0.0, arrow[0] + 0.6, arrow[1] if arrow[1] is not None else 0.0)
                    width = max(width, right + 0.3 + _text_cells(arrow[2], 7))
            # Labels in one column right of every arrow of the row: no tick line crosses a label.
            label_x[name] = (right or 0.0) + 0.3
            y += 0.25
        y += 0.5
    width = max(width, _text_cells(" · ".join(picture.notes), 7))
    return _Geometry(width, y + 0.8, x_of, gaps, header_y, strip_y, row_y, lanes, arrows, label_x, index_rotated, y)


def _arrow(step: PictureStep, strip: PictureStrip, itemsize: int, x_at):
    """(x start, x end, label) of one step's arrow; x end None for stride 0; None if the start is elided."""
    half = itemsize / strip.unit_bytes / 2
    start = x_at(step.from_index * itemsize)
    if start is None:
        return None
    if itemsize == strip.itemsize:
        jump = f"{step.stride:,} cell" + ("" if step.stride == 1 else "s")
    else:
        jump = f"{step.stride * itemsize:,} byte" + ("" if step.stride * itemsize == 1 else "s")
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


def figure_size(picture: LayoutPicture) -> tuple[float, float]:
    """The figure size that draws ``picture`` at its natural scale (what ``draw_layout`` uses).

    Args:
        picture: from ``layout_picture``.

    Returns:
        ``(width, height)`` in inches.

    Raises:
        TypeError: ``picture`` is not a LayoutPicture.
    """
    if not isinstance(picture, LayoutPicture):
        raise TypeError(f"picture must be a LayoutPicture, got {describe(picture)}")
    geometry = _geometry(picture)
    return (geometry.width + 0.6) * _CELL_IN, geometry.height * _ROW_IN


def _fit_points(text: str, cells_wide: float, largest: float = _FONT_PT) -> float:
    """A font size at which ``text`` fits in a cell ``cells_wide`` cells wide."""
    if not text:
        return largest
    room = cells_wide * _CELL_IN * 72 * 0.9
    return max(4.5, min(largest, room / (0.7 * len(text))))


class _MatplotlibCanvas:
    """Emit the picture as matplotlib artists on an Axes (each carrying its gid)."""

    def __init__(self, ax, geometry: _Geometry):
        from matplotlib.patches import FancyArrowPatch, Rectangle
        from matplotlib.transforms import TransformedPatchPath

        self._arrow, self._rectangle = FancyArrowPatch, Rectangle
        self.ax = ax
        # One clip path shared by every artist: left unset, the Axes makes one per artist, which is
        # most of the cost of drawing a few hundred cells.
        self.clip = TransformedPatchPath(ax.patch)
        self._rgba = {}
        ax.set_axis_off()
        ax.set_xlim(-0.3, geometry.width + 0.3)
        ax.set_ylim(geometry.height, 0)

    def _colour(self, name: str) -> tuple:
        """A colour as an RGBA tuple, converted once: matplotlib re-parses every colour string it is given."""
        if name not in self._rgba:
            from matplotlib.colors import to_rgba

            self._rgba[name] = to_rgba(name)
        return self._rgba[name]

    def rect(self, x, y, w, h, face, edge, width=1.0, dash=None, hatch=None, gid=None):
        style = {"--": "--", ":": ":"}.get(dash, "-")
        face, edge = self._colour(face), self._colour(edge)
        # add_artist, not add_patch: limits are fixed, so skipping data-limit updates saves time.
        self.ax.add_artist(
            self._rectangle(
                (x, y),
                w,
                h,
                facecolor=face,
                edgecolor=edge,
                linewidth=width,
                linestyle=style,
                hatch=hatch,
                gid=gid,
                clip_path=self.clip,
            )
        )

    def text(
        self, x, y, s, size, ha="center", va="center", weight="normal", color="black", rotation=0, halo=False, gid=None
    ):
        bbox = {"boxstyle": "round,pad=0.1", "facecolor": "white", "edgecolor": "none", "alpha": 0.85}
        self.ax.text(
            x,
            y,
            s,
            fontsize=size,
            ha=ha,
            va=va,
            fontweight=weight,
            color=self._colour(color),
            rotation=rotation,
            bbox=bbox if halo else None,
            gid=gid,
            linespacing=1.0,
            clip_path=self.clip,
        )

    def line(self, x0, y0, x1, y1, color="#333333", width=0.8):
        self.ax.plot([x0, x1], [y0, y1], color=self._colour(color), linewidth=width, clip_path=self.clip)

    def arrow(self, x0, y0, x1, y1, dashed=False, gid=None):
        self.ax.add_artist(
            self._arrow(
                (x0, y0),
                (x1, y1),
                arrowstyle="-|>",
                mutation_scale=9,
                linewidth=1.2,
                linestyle="--" if dashed else "-",
                color="#222222",
                shrinkA=0,
                shrinkB=0,
                gid=gid,
                clip_path=self.clip,
            )
        )

    def loop(self, x, y, gid=None):
        self.ax.add_artist(
            self._arrow(
                (x - 0.3, y),
                (x + 0.3, y),
                connectionstyle="arc3,rad=1.6",
                arrowstyle="->",
                mutation_scale=8,
                linewidth=1.0,
                gid=gid,
                clip_path=self.clip,
            )
        )


def _xml(text: str) -> str:
    return text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;").replace('"', "&quot;")


class _SvgCanvas:
    """Emit the picture as an SVG document (text stays text: crisp, searchable, cheap to make)."""

    _BASELINE = {"center": "central", "top": "hanging", "bottom": "alphabetic"}
    _ANCHOR = {"center": "middle", "left": "start", "right": "end"}

    def __init__(self, geometry: _Geometry, summary: str):
        self.sx, self.sy = _CELL_IN * 72, _ROW_IN * 72  # points per cell / per layout unit
        self.width, self.height = (geometry.width + 0.6) * self.sx, geometry.height * self.sy
        self.parts = [
            f'<svg xmlns="http://www.w3.org/2000/svg" width="{self.width:.0f}pt" height="{self.height:.0f}pt" '
            f'viewBox="0 0 {self.width:.1f} {self.height:.1f}" role="img" '
            f'font-family="DejaVu Sans, Verdana, sans-serif"><title>{_xml(summary)}</title>'
            '<defs><pattern id="hatch" width="5" height="5" patternUnits="userSpaceOnUse" '
            'patternTransform="rotate(45)"><line x1="0" y1="0" x2="0" y2="5" stroke="#333" stroke-width="1"/>'
            '</pattern><marker id="head" viewBox="0 0 10 10" refX="10" refY="5" markerWidth="4.5" '
            'markerHeight="4.5" orient="auto-start-reverse"><path d="M0,0 L10,5 L0,10 z" fill="#222"/></marker>'
            "</defs>"
        ]

    def _x(self, x):
        return (x + 0.3) * self.sx

    def _y(self, y):
        return y * self.sy

    def rect(self, x, y, w, h, face, edge, width=1.0, dash=None, hatch=None, gid=None):
        dasharray = {"--": ' stroke-dasharray="4,2"', ":": ' stroke-dasharray="1,2"'}.get(dash, "")
        ident = f' id="{_xml(gid)}"' if gid else ""
        box = f'x="{self._x(x):.2f}" y="{self._y(y):.2f}" width="{w * self.sx:.2f}" height="{h * self.sy:.2f}"'
        self.parts.append(f'<rect{ident} {box} fill="{face}" stroke="{edge}" stroke-width="{width}"{dasharray}/>')
        if hatch:
            self.parts.append(f'<rect {box} fill="url(#hatch)" fill-opacity="0.45" stroke="none"/>')

    def text(
        self, x, y, s, size, ha="center", va="center", weight="normal", color="black", rotation=0, halo=False, gid=None
    ):
        ident = f' id="{_xml(gid)}"' if gid else ""
        px, py = self._x(x), self._y(y)
        attributes = (
            f'x="{px:.2f}" y="{py:.2f}" font-size="{size:.1f}" text-anchor="{self._ANCHOR[ha]}" '
            f'dominant-baseline="{self._BASELINE[va]}" fill="{color}"'
        )
        if weight != "normal":
            attributes += f' font-weight="{weight}"'
        if rotation:
            # Turned text is anchored at its bottom end, like matplotlib's va="bottom" with rotation 90.
            attributes = (
                f'x="{px:.2f}" y="{py:.2f}" font-size="{size:.1f}" text-anchor="start" '
                f'dominant-baseline="central" fill="{color}" transform="rotate(-{rotation} {px:.2f} {py:.2f})"'
            )
        lines = s.split("\n")
        if len(lines) == 1:
            if halo:
                # A white outline drawn first, as a separate copy (paint-order is not supported everywhere).
                self.parts.append(f'<text {attributes} stroke="white" stroke-width="3">{_xml(s)}</text>')
            self.parts.append(f"<text{ident} {attributes}>{_xml(s)}</text>")
            return
        first = -(len(lines) - 1) / 2 * 1.1
        spans = "".join(
            f'<tspan x="{px:.2f}" dy="{(first if i == 0 else 1.1):.2f}em">{_xml(line)}</tspan>'
            for i, line in enumerate(lines)
        )
        self.parts.append(f"<text{ident} {attributes}>{spans}</text>")

    def line(self, x0, y0, x1, y1, color="#333333", width=0.8):
        self.parts.append(
            f'<line x1="{self._x(x0):.2f}" y1="{self._y(y0):.2f}" x2="{self._x(x1):.2f}" y2="{self._y(y1):.2f}" '
            f'stroke="{color}" stroke-width="{width}"/>'
        )

    def arrow(self, x0, y0, x1, y1, dashed=False, gid=None):
        ident = f' id="{_xml(gid)}"' if gid else ""
        dash = ' stroke-dasharray="4,2"' if dashed else ""
        self.parts.append(
            f'<line{ident} x1="{self._x(x0):.2f}" y1="{self._y(y0):.2f}" x2="{self._x(x1):.2f}" '
            f'y2="{self._y(y1):.2f}" stroke="#222" stroke-width="1.2"{dash} marker-end="url(#head)"/>'
        )

    def loop(self, x, y, gid=None):
        ident = f' id="{_xml(gid)}"' if gid else ""
        x0, x1, py = self._x(x - 0.3), self._x(x + 0.3), self._y(y)
        self.parts.append(
            f'<path{ident} d="M{x0:.2f},{py:.2f} C{x0 - 4:.2f},{py + 16:.2f} {x1 + 4:.2f},{py + 16:.2f} '
            f'{x1:.2f},{py + 1:.2f}" fill="none" stroke="#222" stroke-width="1" marker-end="url(#head)"/>'
        )

    def finish(self) -> str:
        return "".join(self.parts) + "</svg>"


def _render(canvas, picture: LayoutPicture, geometry: _Geometry) -> None:
    """Draw ``picture`` on ``canvas``; every cell's rectangle and text carries an id naming the cell."""
    fills = {row.name: _ROW_FILLS[i % len(_ROW_FILLS)] for i, row in enumerate(picture.rows)}
    strips = picture.strips

    for strip in strips:
        top = geometry.strip_y[strip.index]
        canvas.text(
            0,
            geometry.header_y[strip.index],
            strip.description,
            _FONT_PT + 1,
            ha="left",
            va="bottom",
            weight="bold",
            gid=f"strip:{strip.index}",
        )
        for x0, x1, hidden in geometry.gaps[strip.index]:
            canvas.rect(
                x0 + 0.1, top, x1 - x0 - 0.2, 1.0, "white", "#888888", 0.8, dash="--", gid=f"gap:{strip.index}:{x0:g}"
            )
            canvas.text(
                (x0 + x1) / 2, top + 0.5, f"… {hidden:,} cells\nnot shown …", 6.5, gid=f"gaptext:{strip.index}:{x0:g}"
            )
            for name in strip.rows:
                canvas.text((x0 + x1) / 2, geometry.row_y[name] + 0.5, "…", _FONT_PT + 2, color="#555555")

    for cell in picture.cells:
        strip = strips[cell.strip]
        x0 = geometry.x_of[cell.strip](cell.byte_start)
        wide = cell.nbytes / strip.unit_bytes
        gid = f"{cell.strip}:{cell.row}:{cell.index}"
        middle = x0 + wide / 2
        if cell.row == "storage":
            top = geometry.strip_y[cell.strip]
            canvas.rect(x0, top, wide, 1.0, _STORAGE_FILL, "#444444", gid=f"cell:{gid}")
            canvas.text(
                middle,
                top - 0.12,
                f"{cell.index:,}",
                6.5,
                va="bottom",
                color="#444444",
                rotation=90 if geometry.index_rotated[cell.strip] else 0,
                gid=f"index:{gid}",
            )
            if cell.text:
                canvas.text(middle, top + 0.5, cell.text, _fit_points(cell.text, wide), gid=f"text:{gid}")
            continue
        top = geometry.row_y[cell.row]
        repeated = cell.state == "read" and (len(cell.positions) > 1 or not cell.count_exact)
        if cell.state == "unread":
            canvas.rect(x0 + 0.04, top, wide - 0.08, 1.0, "white", "#b0b0b0", dash=":", gid=f"cell:{gid}")
        elif cell.state == "unknown":
            canvas.rect(x0 + 0.04, top, wide - 0.08, 1.0, _UNKNOWN_FILL, "#bbbbbb", dash="--", gid=f"cell:{gid}")
        else:
            canvas.rect(
                x0 + 0.04,
                top,
                wide - 0.08,
                1.0,
                fills[cell.row],
                "#222222",
                2.0 if repeated else 1.0,
                hatch="///" if repeated else None,
                gid=f"cell:{gid}",
            )
        if not cell.text:
            continue
        colour = "#888888" if cell.state == "unknown" else "black"
        listed = ",".join(str(p) for p in cell.positions)
        if repeated and len(listed) <= 6 * wide:
            # A repeated cell says how often it is read, and by which elements when that fits.
            canvas.text(
                middle, top + 0.32, cell.text, _fit_points(cell.text, wide), weight="bold", halo=True, gid=f"text:{gid}"
            )
            canvas.text(middle, top + 0.76, listed, _fit_points(listed, wide, 6.5), halo=True, gid=f"positions:{gid}")
        else:
            canvas.text(
                middle,
                top + 0.5,
                cell.text,
                _fit_points(cell.text, wide),
                color=colour,
                weight="bold" if repeated else "normal",
                halo=repeated,
                gid=f"text:{gid}",
            )

    for row in picture.rows:
        canvas.text(
            0,
            geometry.row_y[row.name] - 0.12,
            row.label,
            _FONT_PT,
            ha="left",
            va="bottom",
            gid=f"label:{row.strip}:{row.name}",
        )

    for step in picture.steps:
        arrow = geometry.arrows[(step.row, step.dim)]
        if arrow is None:
            continue  # the row's first cell is elided: its label still gives the strides
        start, end, label = arrow
        bottom = geometry.row_y[step.row] + 1.0
        lane = geometry.lanes[(step.row, step.dim)]
        gid = f"step:{step.strip}:{step.row}:{step.dim}"
        if step.stride == 0:
            canvas.loop(start, bottom + 0.05, gid=gid)
        else:
            canvas.line(start, bottom, start, lane)
            if step.shown:
                canvas.line(end, bottom, end, lane)
            canvas.arrow(start, lane, end, lane, dashed=not step.shown, gid=gid)
        canvas.text(
            geometry.label_x[step.row],
            lane,
            label,
            7,
            ha="left",
            halo=True,
            gid=f"steptext:{step.strip}:{step.row}:{step.dim}",
        )

    canvas.text(
        0, geometry.legend_y + 0.2, " · ".join(picture.notes), 7, ha="left", va="top", color="#444444", gid="legend"
    )


def picture_svg(picture: LayoutPicture) -> str:
    """Render a ``LayoutPicture`` as a standalone SVG document (its summary is the SVG's ``<title>``).

    The same drawing as ``draw_layout``, as text: elements carry the same ids (``cell:<strip>:<row>:<index>``,
    ``text:...``), and it renders in a browser in no time, which is what the live explorers display.

    Args:
        picture: from ``layout_picture``.

    Returns:
        The SVG document as a str.

    Raises:
        TypeError: ``picture`` is not a LayoutPicture.
    """
    if not isinstance(picture, LayoutPicture):
        raise TypeError(f"picture must be a LayoutPicture, got {describe(picture)}")
    geometry = _geometry(picture)
    canvas = _SvgCanvas(geometry, picture.summary)
    _render(canvas, picture, geometry)
    return canvas.finish()


_check_ax = require_axes


def _attach(fig, picture: LayoutPicture):
    fig.summary = picture.summary
    fig.layout_picture = picture
    fig.layout_cells = picture.cells
    return fig


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
        ``fig.layout_picture`` (the ``LayoutPicture`` drawn) and ``fig.layout_cells`` (its cells).
        Patches and texts carry gids ``cell:<strip>:<row>:<index>`` and ``text:<strip>:<row>:<index>``.

    Raises:
        TypeError: an argument has the wrong type (the message names it).
        ValueError: as ``layout_picture``.
    """
    ax = _check_ax(ax)
    picture = layout_picture(*tensors, names=names, max_cells=max_cells, show_values=show_values)
    geometry = _geometry(picture)
    if ax is None:
        fig, ax = bare_figure((geometry.width + 0.6) * _CELL_IN, geometry.height * _ROW_IN)
    else:
        fig = ax.get_figure(root=True)
    _render(_MatplotlibCanvas(ax, geometry), picture, geometry)
    return _attach(fig, picture)


def redraw_layout(fig, picture: LayoutPicture):
    """Clear ``fig``, resize it to fit, and draw ``picture`` into it (reusing one figure in explorers).

    Args:
        fig: a matplotlib Figure to reuse.
        picture: from ``layout_picture``.

    Returns:
        ``fig``, with ``summary``, ``layout_picture`` and ``layout_cells`` updated.

    Raises:
        TypeError: ``fig`` is not a Figure or ``picture`` not a LayoutPicture.
    """
    from matplotlib.figure import Figure

    if not isinstance(fig, Figure):
        raise TypeError(f"fig must be a matplotlib Figure, got {describe(fig)}")
    if not isinstance(picture, LayoutPicture):
        raise TypeError(f"picture must be a LayoutPicture, got {describe(picture)}")
    geometry = _geometry(picture)
    fig.clear()
    fig.set_size_inches((geometry.width + 0.6) * _CELL_IN, geometry.height * _ROW_IN)
    ax = fig.add_axes((0, 0, 1, 1))
    _render(_MatplotlibCanvas(ax, geometry), picture, geometry)
    return _attach(fig, picture)


__all__ = [
    "LayoutPicture",
    "PictureCell",
    "PictureRow",
    "PictureStep",
    "PictureStrip",
    "draw_layout",
    "figure_size",
    "layout_picture",
    "layout_summary",
    "picture_svg",
    "redraw_layout",
    "storage_values_text",
]
