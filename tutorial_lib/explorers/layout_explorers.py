"""Live explorers (ipywidgets 8): strides over a fixed storage, and which operations view or copy.

Each explorer is an ``Explorer`` (see ``base.py``): its widgets are attributes, ``update()`` recomputes
everything from the widgets' values, and ``summary``, ``picture``, ``layout_model``, ``scene`` and ``figure``
describe the current state, so tests drive an explorer by setting ``.value`` on its widgets, with no browser.
The explorer displays as an ipywidgets VBox. The live picture is the layout picture's scene as inline SVG in
an ``HTML`` widget: it needs no ipympl, works in JupyterLab, and redraws in a few milliseconds, where
rasterising a matplotlib figure on every change takes several times the 50 ms budget
(benchmarks/bench_explorers.py). ``figure`` draws the same scene with matplotlib, into one reused figure.

torch is the judge of what is possible: the stride explorer builds its tensor with ``torch.as_strided``
and shows torch's refusal, explained, in a message instead of raising; a setting that runs past the storage's
end is drawn anyway, the elements reading the ``GHOST_CELLS`` cells just past the end as dashed ghost cells. Its
text fields send a value when an edit is complete (Enter or leaving the field), so half-typed settings are never
drawn.

The pictures link what belongs together with CSS alone (``hover_css``: no JavaScript): hovering an element of
a tensor's grid outlines the storage cell it reads, its cell in the tensor's row and its address-table row, and
hovering a cell or a table row outlines the elements reading it.

The view/copy explorer shows its verdict as a large VIEW / ALIAS / COPY / IN-PLACE badge (colour and word, with a
sentence saying it) above one picture of ``x`` and the result, and can put a second operation beside it.
For a copy, a row "from x" under its storage says which of ``x``'s storage cells holds each cell's value, and
hovering links an element to that cell.
"""

from __future__ import annotations

import html
import itertools
import math
import re
from dataclasses import dataclass

import torch

from ..common.checks import describe, require_positive_int, require_tensor, require_type
from ..common.text import op_name, plural
from ..facts.ops import OpReport, OpRow, view_or_copy
from ..facts.storage import layout, planned_layout, unravel_index
from ..pictures import palette
from ..pictures.layout_picture import GHOST_CELLS, LayoutPicture, layout_picture, layout_scene
from ..pictures.scene import Scene
from .base import Explorer

#: The dtypes the stride explorer offers, by the name shown in its dropdown.
DTYPES = {
    "float32": torch.float32,
    "float64": torch.float64,
    "float16": torch.float16,
    "bfloat16": torch.bfloat16,
    "int64": torch.int64,
    "int32": torch.int32,
    "int16": torch.int16,
    "int8": torch.int8,
    "uint8": torch.uint8,
}
#: The largest storage the stride explorer builds (its values are listed and drawn).
MAX_STORAGE_SIZE = 4096
#: How many elements the address table lists (it scrolls within ``TABLE_HEIGHT``).
TABLE_ROWS = 64
#: The most the address table takes up on the page; longer tables scroll inside it.
TABLE_HEIGHT = "15em"

#: The operations ``view_copy_explorer`` offers by default (each an expression in ``x``).
OPERATIONS = (
    "x.t()",
    "x[0]",
    "x[:, 1]",
    "x[1:, ::2]",
    "x[[0, 2]]",
    "x.index_select(0, torch.tensor([0, 2]))",
    "x.masked_select(x > 105)",
    "x.gather(1, torch.tensor([[0], [1], [2]]))",
    "x.flip(0)",
    "x.reshape(-1)",
    "x.t().reshape(-1)",
    "x.view(-1)",
    "x.contiguous()",
    "x.t().contiguous()",
    "x[0].expand(3, 4)",
    "x.unsqueeze(0)",
    "x.permute(1, 0)",
    "x.diagonal()",
    "x.narrow(1, 1, 2)",
    "x.view(torch.uint8)",
    "x.clone()",
    "x.detach()",
    "x.add_(1)",
    "x * 2",
)

_NUMBER = re.compile(r"^[+-]?\d+$")
#: Each explorer's widgets carry a class of their own, so hover rules reach only that explorer's table.
_SCOPES = itertools.count()
#: How a hovered thing's partners are outlined (palette ink, thick) and its table row tinted.
HOVER_OUTLINE = f"stroke:{palette.INK} !important;stroke-width:3.5px !important"
HOVER_ROW = f"background:{palette.STORAGE}"


def _css_string(text: str) -> str:
    """``text`` as a quoted CSS string (for attribute selectors: ids hold ':', '[' and spaces)."""
    return '"' + text.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\a ") + '"'


def hover_css(picture: LayoutPicture, scope: str, links=()) -> str:
    """An inline ``<style>`` that links each grid element to the cells it reads, and back, on hover.

    Within one SVG picture: hovering ``elem:<row>:<position>`` outlines the storage cell and the row cell it
    reads; hovering either cell outlines the elements that read it. Within the element of class ``scope``:
    hovering an element tints the address-table row ``tr[data-elem=...]`` of the same id, and hovering the row
    outlines the element and its cells. ``links`` adds ``(element id, cell id)`` pairs (a copy's sources).

    Args:
        picture: the ``LayoutPicture`` drawn.
        scope: a CSS class name (letters, digits, '-') on an element holding the picture and the table.
        links: more ``(element id, cell id)`` pairs to link both ways.

    Returns:
        ``<style>...</style>`` (text in the picture lets the pointer through to the shapes under it).
    """
    require_type(picture, LayoutPicture, "picture", "a LayoutPicture")
    if not isinstance(scope, str) or not re.fullmatch(r"[A-Za-z][\w-]*", scope):
        raise ValueError(f"scope must be a CSS class name such as 'tl-explorer-1', got {scope!r}")
    itemsizes = {strip.index: strip.itemsize for strip in picture.strips}
    pairs = list(links)
    for grid in picture.grids:
        lay = next(row.layout for row in picture.rows if row.name == grid.row)
        for element in grid.elements:
            if element.past_end:
                continue
            ident = f"elem:{grid.row}:{element.position}"
            cell = element.storage_index * lay.itemsize // itemsizes[grid.strip]
            pairs += [
                (ident, f"cell:{grid.strip}:storage:{cell}"),
                (ident, f"cell:{grid.strip}:{grid.row}:{element.storage_index}"),
            ]
    inside, table = [], []
    for element, cell in dict.fromkeys(pairs):
        e, c = _css_string(element), _css_string(cell)
        inside += [f"svg:has([id={e}]:hover) [id={c}]", f"svg:has([id={c}]:hover) [id={e}]"]
        table.append(f".{scope}:has(tr[data-elem={e}]:hover) [id={c}]")
    elements = dict.fromkeys(element for element, _ in pairs)
    for element in elements:
        e = _css_string(element)
        table.append(f".{scope}:has(tr[data-elem={e}]:hover) [id={e}]")
    rows = [f".{scope}:has([id={_css_string(e)}]:hover) tr[data-elem={_css_string(e)}]" for e in elements]
    rules = [f".{scope} svg text{{pointer-events:none}}"]
    if inside or table:
        rules.append(f"{','.join(inside + table)}{{{HOVER_OUTLINE}}}")
    if rows:
        rules.append(f"{','.join(rows)}{{{HOVER_ROW}}}")
    return f"<style>{''.join(rules)}</style>"


def parse_ints(text, name: str) -> tuple[int, ...]:
    """Read a shape or stride typed as text: ``"3, 4"``, ``"(3, 4)"``, ``"[3 4]"``, ``"(3,)"``, ``""`` (0-dim).

    Args:
        text: the text typed into a widget.
        name: what it is (``"shape"``, ``"stride"``), for the error message.

    Returns:
        The numbers as a tuple of ints (``()`` for empty text or ``"()"``).

    Raises:
        TypeError: ``text`` is not a str.
        ValueError: an entry is not a whole number (the message names ``name`` and the entry).
    """
    require_type(text, str, name, "a str such as '3, 4'")
    inner = text.strip().strip("()[]").strip()
    if not inner:
        return ()
    pieces = [p.strip() for p in re.split(r"[,\s]+", inner)]
    if pieces and pieces[-1] == "":
        pieces.pop()  # a trailing comma, as in "(3,)"
    values = []
    for piece in pieces:
        if not _NUMBER.match(piece):
            raise ValueError(f"{name} must be whole numbers separated by commas, like 3, 4: {piece!r} is not")
        values.append(int(piece))
    return tuple(values)


def _first_line(error: BaseException) -> str:
    """An error's message without the C++ stack torch appends to some of them."""
    text = str(error)
    return text.split("\nException raised from")[0].strip() or type(error).__name__


def _ints_text(values) -> str:
    """``(3, 4)`` -> ``"3, 4"``, as typed into the shape and stride boxes."""
    return ", ".join(str(v) for v in values)


def _explain_refusal(error: RuntimeError, storage_numel: int, dtype_name: str, setting=None) -> str:
    """Plain words for why ``torch.as_strided`` refused a setting (torch's own message is shown too).

    ``setting`` is ``(shape, stride, offset, itemsize)``: with it, an overflow says the size that overflowed.
    """
    text = str(error)
    if "out of bounds" in text:
        return (
            f"Out of bounds: with this shape, stride and offset some element would lie past the end of "
            f"the storage, which has {storage_numel} {dtype_name} elements (storage indices 0 to "
            f"{storage_numel - 1}). Make a size, a stride or the offset smaller."
        )
    if "Negative strides" in text:
        return (
            "Negative strides are not allowed: a PyTorch tensor only steps forward through its storage "
            "(flip() makes a reversed copy instead)."
        )
    if "storage offset" in text:
        return "The storage offset must be 0 or more: it is the storage index of the first element."
    if "negative dimension" in text or "overflowed" in text and setting and min(setting[0], default=0) < 0:
        return "Every size in the shape must be 0 or more."
    if "overflowed" in text and setting:
        shape, stride, offset, itemsize = setting
        last = offset + sum((size - 1) * step for size, step in zip(shape, stride))
        return (
            f"Storage size calculation overflowed: the last element would read storage index {last:,}, so the "
            f"storage would need {(last + 1) * itemsize:,} bytes, more than torch's 64-bit integers hold "
            f"(2**63 - 1 = {2**63 - 1:,})."
        )
    if "multiplication overflow" in text and setting:
        return (
            f"Too many elements: the shape holds {math.prod(setting[0]):,} elements, more than torch's 64-bit "
            f"integers can count (2**63 - 1 = {2**63 - 1:,})."
        )
    if "mismatch in length" in text:
        return (
            "shape and stride need the same number of entries: one stride per dimension "
            "(press 'contiguous strides' to fill them in)."
        )
    return "torch refused this setting."


def _past_end_text(picture: LayoutPicture, lay) -> str:
    """What a picture of a setting that runs past the storage's end shows of it: the layout picture draws a
    ghost cell only for the ``GHOST_CELLS`` cells just past the end."""
    end, last = lay.storage_numel, lay.index_range[1]
    if last < end + GHOST_CELLS:
        return (
            "; drawn anyway, its elements past the end as dashed ghost cells "
            f"(the last would read storage index {last:,})"
        )
    reach = f"the last would read storage index {last:,}, {plural(last - end + 1, 'cell', fmt=',')} past the end"
    window = f"the {GHOST_CELLS} cells just past the end (indices {end:,}–{end + GHOST_CELLS - 1:,})"
    if any(cell.state == "ghost" for cell in picture.cells):
        return f"; drawn anyway, with dashed ghost cells only for the elements reading {window}; {reach}"
    return f"; drawn anyway, without ghost cells: no element reads {window}; {reach}"


class StrideExplorer(Explorer):
    """Shape, stride, offset and dtype over a fixed ``torch.arange`` storage, with the layout live.

    Widgets: ``shape`` and ``stride`` (text such as ``3, 4``), ``offset`` (int), ``dtype`` (dropdown),
    ``contiguous_button`` (fills in contiguous strides for the shape), ``message`` (why a setting is
    impossible), ``picture_view`` (the layout picture), ``table`` (is_contiguous and element addresses).
    The text and number fields send their value when an edit is complete (Enter, or leaving the field),
    never on every keystroke, so typing ``4,`` on the way to ``4, 3`` neither flashes an error nor fades
    the picture.

    Args:
        storage_size: elements in the storage, ``torch.arange(100, 100 + storage_size)`` cast to ``dtype`` (1 to
            4096): values that differ from the storage indices.
        dtype: the storage's initial dtype (one of ``DTYPES``).
        max_cells: the most storage cells the picture draws.

    Attributes after each ``update()``:
        tensor: ``torch.as_strided(storage, shape, stride, offset)``, or None when torch refuses.
        layout_model: the ``Layout`` of ``tensor`` (None when invalid).
        picture: the ``LayoutPicture`` drawn (None when invalid).
        scene: the picture's ``Scene`` (None when invalid).
        error: the explanation shown in ``message`` ('' when valid).
        summary: one line of text describing the current state (the error when invalid).
        addresses: ``(position, index, storage index, byte offset)`` rows of the table.
    """

    def __init__(self, storage_size: int = 12, dtype=torch.float32, max_cells: int = 64):
        require_positive_int(storage_size, "storage_size")
        if storage_size > MAX_STORAGE_SIZE:
            raise ValueError(f"storage_size must be at most {MAX_STORAGE_SIZE}, got {storage_size}")
        names = {v: k for k, v in DTYPES.items()}
        require_type(dtype, torch.dtype, "dtype", "a torch.dtype such as torch.float32")
        if dtype not in names:
            raise ValueError(f"dtype must be one of {', '.join('torch.' + n for n in DTYPES)}, got {dtype}")
        require_positive_int(max_cells, "max_cells")
        self.storage_size = storage_size
        self.max_cells = max_cells
        self._initial_dtype = names[dtype]
        self.scope = f"tl-explorer-{next(_SCOPES)}"
        _ = self.widget  # the widgets hold the setting, so they are made now
        self._build_storage()
        self.update()

    def _build(self, widgets):
        """The setting's controls (wired to ``update``), the message, the picture and the address table."""
        rows = max(d for d in range(1, math.isqrt(self.storage_size) + 1) if self.storage_size % d == 0)
        shape = (rows, self.storage_size // rows) if rows > 1 else (self.storage_size,)
        contiguous = torch.empty(shape, device="meta").stride()
        on_enter = {"continuous_update": False}  # the value arrives on Enter or leaving the field
        self.shape = widgets.Text(value=_ints_text(shape), description="shape", **on_enter)
        self.stride = widgets.Text(value=_ints_text(contiguous), description="stride", **on_enter)
        self.offset = widgets.IntText(value=0, description="offset", **on_enter)
        hint = widgets.HTML("<small>type, then press Enter</small>")
        self.dtype = widgets.Dropdown(options=list(DTYPES), value=self._initial_dtype, description="dtype")
        self.contiguous_button = widgets.Button(
            description="contiguous strides", tooltip="set the strides a new tensor of this shape would have"
        )
        self.message = widgets.HTML()
        self.picture_view = widgets.HTML()
        self.table = widgets.HTML()
        for control in (self.shape, self.stride, self.offset):
            control.observe(lambda change: self.update(), names="value")
        self.dtype.observe(self._dtype_changed, names="value")
        self.contiguous_button.on_click(lambda button: self.set_contiguous_strides())
        box = widgets.VBox(
            [
                widgets.HBox([self.shape, self.stride, hint]),
                widgets.HBox([self.offset, self.dtype, self.contiguous_button]),
                self.message,
                self.picture_view,
                self.table,
            ]
        )
        box.add_class(self.scope)  # hover rules link the picture and the table within this explorer only
        return box

    def _build_storage(self) -> None:
        # arange then cast: small integer dtypes wrap around instead of failing for big storages.
        self.storage = torch.arange(100, 100 + self.storage_size).to(DTYPES[self.dtype.value])

    def _dtype_changed(self, change) -> None:
        self._build_storage()
        self.update()

    def set_contiguous_strides(self) -> None:
        """Fill in the strides torch gives a new tensor of the current shape (row-major, no gaps)."""
        try:
            shape = parse_ints(self.shape.value, "shape")
            strides = torch.empty(shape, device="meta").stride()
        except Exception as error:  # noqa: BLE001 - shown in the widget (bad text, negative or huge sizes)
            self._invalid(f"Cannot work out contiguous strides: {_first_line(error)}", "")
            return
        self.stride.value = _ints_text(strides)

    def _invalid(self, explanation: str, torch_says: str, past_end: LayoutPicture | None = None) -> None:
        """Show why a setting is impossible; ``past_end`` draws one that runs past the storage's end, with ghosts."""
        if past_end is None and self.scene is not None:  # the last valid picture stays, faded: no jump
            self.picture_view.value = self.svg_html(faded=True)
        self.tensor = self.layout_model = self.picture = self.scene = None
        self.addresses = ()
        self.error = explanation
        self.summary = f"invalid setting: {explanation}" + (f" (torch: {torch_says})" if torch_says else "")
        if past_end is not None:  # drawn as it would be: where it runs out is the answer
            self.picture, self.scene, self.layout_model = past_end, layout_scene(past_end), past_end.rows[0].layout
            self.picture_view.value = hover_css(past_end, self.scope) + self.svg_html()
            self.summary += _past_end_text(past_end, self.layout_model)
        detail = f"<br><code>torch: {html.escape(torch_says)}</code>" if torch_says else ""
        self.message.value = f'<div style="color:{palette.STALE}"><b>⚠ {html.escape(explanation)}</b>{detail}</div>'
        self.table.value = ""

    def update(self) -> None:
        """Rebuild the tensor from the widgets and redraw picture, table, message and summary.

        Never raises: a setting that cannot be shown (impossible for torch, numbers too large, or any
        other failure) is explained in ``message`` instead, as a widget callback has nowhere to raise to.
        """
        try:
            self._update()
        except Exception as error:  # noqa: BLE001 - a widget callback must show the problem, not raise it
            self._invalid(f"This setting cannot be shown ({type(error).__name__}: {_first_line(error)}).", "")

    def _update(self) -> None:
        try:
            shape = parse_ints(self.shape.value, "shape")
            stride = parse_ints(self.stride.value, "stride")
        except ValueError as error:
            self._invalid(str(error), "")
            return
        offset = self.offset.value
        dtype_name = self.dtype.value
        named = (("shape", shape), ("stride", stride), ("offset", (offset,)))
        too_large = [f"{name} {value:,}" for name, values in named for value in values if abs(value) >= 2**63]
        if too_large:
            self._invalid(
                f"Too large: {', '.join(too_large)}. Sizes, strides and the offset are 64-bit integers in torch "
                f"(below 2**63 = {2**63:,}); this storage has only {self.storage_size} elements.",
                "",
            )
            return
        try:
            tensor = torch.as_strided(self.storage, shape, stride, offset)
        except (RuntimeError, TypeError, ValueError, OverflowError) as error:
            past_end = None
            drawable = min((*shape, *stride, offset), default=0) >= 0  # a negative size has no picture to draw
            if "out of bounds" in str(error) and drawable:
                lay = planned_layout(self.storage, shape, stride, offset)
                past_end = layout_picture(lay, names=["t"], max_cells=self.max_cells, values_from=self.storage)
            setting = (shape, stride, offset, self.storage.element_size())
            self._invalid(_explain_refusal(error, self.storage_size, dtype_name, setting), _first_line(error), past_end)
            return
        self.tensor = tensor
        self.picture = layout_picture(tensor, names=["t"], max_cells=self.max_cells)
        self.layout_model = self.picture.rows[0].layout
        self.error = ""
        self.message.value = ""
        self.summary = f"{self.picture.summary}; t.is_contiguous() is {tensor.is_contiguous()}"
        self.scene = layout_scene(self.picture)
        self.picture_view.value = hover_css(self.picture, self.scope) + self.svg_html()
        self.addresses = self._addresses(tensor)
        self.table.value = self._table_html()

    def _addresses(self, tensor: torch.Tensor) -> tuple[tuple[int, tuple[int, ...], int, int], ...]:
        """(row-major position, index, storage index, byte offset) for the first ``TABLE_ROWS`` elements.

        Storage indices come from the layout; byte offsets from torch's own data pointers (the address
        of each element minus the storage's), so the table shows what the hardware address really is.
        """
        lay = self.layout_model
        base = tensor.untyped_storage().data_ptr()
        rows = []
        for position in range(min(TABLE_ROWS, lay.numel)):
            index = unravel_index(position, lay.shape)
            element = tensor[index] if index else tensor
            rows.append((position, index, lay.element_indices[position], element.data_ptr() - base))
        return tuple(rows)

    def _table_html(self) -> str:
        """is_contiguous, the address formula, and the first elements' addresses in a compact scrolling table."""
        lay = self.layout_model
        verdict = "yes: row-major order, no gaps" if lay.is_contiguous else "no"
        head = (
            f"<p><b>t.is_contiguous()</b>: {verdict} · element address = "
            f"<code>{html.escape(lay.formula())}</code> · {plural(lay.itemsize, 'byte')} per element</p>"
        )
        sticky = "position:sticky;top:0;background:#ffffff"  # the header stays in view while the rows scroll
        numbers = 'style="padding:0 0 0 1.2em;text-align:right"'
        rows = "".join(
            f'<tr data-elem="elem:t:{position}"><td>t[{", ".join(map(str, index))}]</td>'
            f"<td {numbers}>{storage_index}</td><td {numbers}>{byte_offset}</td></tr>"
            for position, index, storage_index, byte_offset in self.addresses
        )
        header = (
            f'<tr><th style="text-align:left;{sticky}">element</th>'
            f'<th style="padding-left:1.2em;text-align:right;{sticky}">storage index</th>'
            f'<th style="padding-left:1.2em;text-align:right;{sticky}">byte offset</th></tr>'
        )
        listed = len(self.addresses)
        more = f"<p>… {lay.numel - listed:,} more elements</p>" if lay.numel > listed else ""
        # The picture labels its parts in place; the long legend (what each number and border means) is here.
        notes = "".join(f"<li>{html.escape(note)}</li>" for note in self.picture.notes)
        help_text = f"<details><summary>How to read the picture</summary><ul>{notes}</ul></details>"
        return (
            f'{head}{help_text}<div style="max-height:{TABLE_HEIGHT};overflow-y:auto;display:inline-block">'
            '<table style="border-collapse:collapse;font-family:monospace;font-size:12px;line-height:1.35">'
            f"{header}{rows}</table></div>{more}"
        )


#: How the view/copy explorer's badge shows each verdict: (word, background, text colour, what the sentence
#: beside it says after the expression). The colours are the course palette's verdicts (``VERDICT_COLOURS``: view
#: blue, alias teal, copy orange, in-place vermilion, storage grey; the op table's verdict chips use the same),
#: told apart with every common colour vision and never used for a tensor; the word and the sentence say it
#: without colour.
VERDICT_BADGES = {
    "view": ("VIEW", *palette.VERDICT_COLOURS["view"], "is a view of x"),
    "alias": ("ALIAS", *palette.VERDICT_COLOURS["alias"], "shares x's memory but not its version counter"),
    "copy": ("COPY", *palette.VERDICT_COLOURS["copy"], "is a copy"),
    "in-place": ("IN-PLACE", *palette.VERDICT_COLOURS["in-place"], "changes x in place"),
    "same tensor": ("SAME TENSOR", *palette.VERDICT_COLOURS["same tensor"], "returns x itself"),
    "existing memory": (
        "EXISTING",
        *palette.VERDICT_COLOURS["existing memory"],
        "returns memory x held before, not x's own",
    ),
}
#: What the view/copy explorer's "compare with" dropdown shows when nothing is compared.
NO_COMPARISON = "nothing"


@dataclass(frozen=True)
class OperationOutcome:
    """What one operation on ``x`` did (``run_operation``): torch's verdict, the result and its picture, or why
    it failed (then ``row`` and everything after it are None)."""

    expression: str
    summary: str
    report: OpReport | None = None
    row: OpRow | None = None
    result: torch.Tensor | None = None
    picture: LayoutPicture | None = None
    scene: Scene | None = None
    sources: tuple[int, ...] | None = None  # a copy's: per element (row-major), the x storage index it holds

    def source_links(self) -> tuple[tuple[str, str], ...]:
        """``(result element id, x cell id)`` pairs linking each element of a copy to the x cell holding its value."""
        if self.sources is None:
            return ()
        return tuple(
            (f"elem:{self.expression}:{position}", f"cell:0:{row}:{index}")
            for position, index in enumerate(self.sources)
            for row in ("storage", "x")
        )


#: ``copied_from`` compares values only for tensors up to this many elements.
MAX_SOURCES = 4096


def copied_from(x: torch.Tensor, result: torch.Tensor) -> tuple[int, ...] | None:
    """Which cell of ``x``'s storage each element of ``result`` (row-major) holds the value of.

    Worked out by value: an answer only when every value ``x`` reads sits in one storage cell and every
    element of ``result`` equals one of them (so a copy of an ``arange`` is traced exactly); None otherwise, or
    when either has more than ``MAX_SOURCES`` elements.

    Raises:
        TypeError: ``x`` or ``result`` is not a tensor.
    """
    require_tensor(x, "x", allow_meta=False)
    require_tensor(result, "result", allow_meta=False)
    if not 0 < result.numel() <= MAX_SOURCES or x.numel() > MAX_SOURCES or result.is_complex() != x.is_complex():
        return None
    cells: dict = {}
    indices = layout(x, max_elements=MAX_SOURCES).element_indices
    for value, index in zip(x.detach().reshape(-1).tolist(), indices):
        cells.setdefault(value, set()).add(index)
    if any(len(found) > 1 for found in cells.values()):
        return None  # one value in two cells: which one a copy read cannot be told by value
    sources = []
    for value in result.detach().reshape(-1).tolist():
        found = cells.get(value)
        if found is None:
            return None
        sources.append(next(iter(found)))
    return tuple(sources)


def run_operation(x: torch.Tensor, expression: str, max_cells: int = 64) -> OperationOutcome:
    """Run ``expression`` (Python, in ``x`` and ``torch``) on a fresh copy of ``x`` and say what it did.

    Never raises on the operation's account: an expression that fails, returns something other than a
    tensor, or gives a result the layout picture cannot draw is an outcome whose ``summary`` says why.

    Args:
        x: the tensor the expression reads as ``x``; never modified.
        expression: e.g. ``"x.t()"``.
        max_cells: the most storage cells the picture draws.

    Returns:
        An ``OperationOutcome``; its ``picture`` shows ``x`` and the result over their storages.
    """
    require_tensor(x, "x", allow_meta=False)
    require_type(expression, str, "expression", "a str such as 'x.t()'")
    require_positive_int(max_cells, "max_cells")
    captured = {}

    def run(x):  # view_or_copy passes a fresh copy of x, by the name x
        captured["x"] = x
        captured["result"] = eval(expression, {"torch": torch}, {"x": x})  # noqa: S307 - the learner's own kernel
        return captured["result"]

    try:
        report = view_or_copy({expression: run}, x=x)
        result = captured.get("result")
        if not isinstance(result, torch.Tensor):
            return OperationOutcome(expression, _not_a_tensor(expression, result))
        sources = copied_from(captured["x"], result) if report[0].verdict == "copy" else None
        copied = None if sources is None else {expression: ("x", sources)}
        picture = layout_picture(captured["x"], result, names=["x", expression], max_cells=max_cells, copied=copied)
        scene = layout_scene(picture)
    except Exception as error:  # noqa: BLE001 - any failure of the learner's op is shown, not raised
        return OperationOutcome(
            expression, f"{expression} cannot run on this x: {type(error).__name__}: {_first_line(error)}"
        )
    row = report[0]
    shares = "shares memory with x" if row.shares_memory else "shares no memory with x"
    ops = ", ".join(op_name(op) for op in row.aten_ops) or "(none)"
    summary = (
        f"{expression}: {row.verdict}, allocates {row.new_bytes:,} bytes{_temporaries(row)}, {shares}; "
        f"aten ops: {ops}; after: {picture.summary}"
    )
    return OperationOutcome(expression, summary, report, row, result, picture, scene, sources)


def _not_a_tensor(expression: str, result) -> str:
    """What an operation that ran gave instead of a tensor, and a tensor to look at instead where there is one."""
    fields = getattr(type(result), "__match_args__", ()) if isinstance(result, tuple) else ()
    if fields:  # torch.return_types: values, indices
        what, instead = f"torch.return_types.{type(result).__name__} ({', '.join(fields)})", f"{expression}.{fields[0]}"
    elif isinstance(result, (tuple, list)) and result and all(isinstance(r, torch.Tensor) for r in result):
        what, instead = f"a {type(result).__name__} of {plural(len(result), 'tensor')}", f"{expression}[0]"
    elif result is None or isinstance(result, torch.Size) and len(repr(result)) <= 60:
        what, instead = repr(result), ""
    elif isinstance(result, (bool, int, float, complex)) and len(repr(result)) <= 40:
        what, instead = f"the {type(result).__name__} {result!r}", ""
    else:
        what, instead = f"a {type(result).__module__.split('.')[0]}.{type(result).__name__}", ""
        if what.startswith("a builtins."):
            what = f"a {type(result).__name__}"
    advice = f", e.g. {instead}" if instead else ""
    return f"{expression} ran and returned {what}, not a tensor: this explorer draws only tensor results{advice}"


def sources_html(outcome: OperationOutcome) -> str:
    """One line under a copy's picture: what its row "from x" says, said once there ('' if not traced).

    It says "holds the value", not "was copied from": the cells are found by value, and a computed result
    (``x.abs()`` of positive values) holds x's values without being copied from them.
    """
    require_type(outcome, OperationOutcome, "outcome", "an OperationOutcome")
    if outcome.sources is None or not any(strip.sources for strip in outcome.picture.strips):
        return ""
    return (
        '<div style="font-size:13px;max-width:60em">the row <b>from x</b> under the copy\'s storage: the cell of '
        "x's storage holding each cell's value (hover an element of the copy's grid to see that cell in x)</div>"
    )


def _temporaries(row: OpRow) -> str:
    """What a row allocated while running beyond what it kept, in words ('' when nothing)."""
    if row.total_new_bytes == row.new_bytes:
        return ""
    return f" ({row.total_new_bytes:,} bytes while running, temporaries included)"


def verdict_html(outcome: OperationOutcome) -> str:
    """A large VIEW / ALIAS / COPY / IN-PLACE badge (colour and word) and the facts behind it, as HTML.

    The badge's sentence says the verdict in words too, for screen readers and for readers without colour.
    A failed outcome is its ⚠ message.
    """
    require_type(outcome, OperationOutcome, "outcome", "an OperationOutcome")
    row = outcome.row
    if row is None:
        return f'<div style="color:{palette.STALE}"><b>⚠ {html.escape(outcome.summary)}</b></div>'
    word, background, color, says = VERDICT_BADGES.get(
        row.verdict, (row.verdict.upper(), palette.STORAGE, palette.INK, f"is: {row.verdict}")
    )
    shares = "shares memory with x" if row.shares_memory else "shares no memory with x"
    sentence = f"<code>{html.escape(outcome.expression)}</code> {html.escape(says)}"
    ops = ", ".join(op_name(op) for op in row.aten_ops) or "(none)"
    cell = 'style="padding:0 0.8em 0 0"'
    return (
        f'<div role="status" style="margin:4px 0">'
        f'<span style="display:inline-block;padding:2px 14px;border-radius:6px;background:{background};'
        f"color:{color};border:2px solid {palette.INK};font:bold 26px sans-serif;letter-spacing:0.04em;"
        f'vertical-align:middle">{word}</span>'
        f'<div style="font-size:14px;margin-top:2px">{sentence}: {shares}</div></div>'
        '<table style="border-collapse:collapse;font-family:monospace;font-size:12px">'
        f"<tr><td {cell}>bytes allocated</td><td>{row.new_bytes:,}{html.escape(_temporaries(row))}</td></tr>"
        f"<tr><td {cell}>shares memory with x</td><td>{'yes' if row.shares_memory else 'no'}</td></tr>"
        f"<tr><td {cell}>aten ops</td><td>{html.escape(ops)}</td></tr></table>"
    )


class ViewCopyExplorer(Explorer):
    """Pick an operation on ``x``; see whether it views or copies, what it allocates, and the layouts.

    Widgets: ``operation`` (dropdown of expressions in ``x``), ``compare`` (a second one, or
    ``NO_COMPARISON``), ``message`` (an operation that fails for this ``x``), ``verdict`` (a large VIEW /
    COPY / IN-PLACE badge, bytes, shares memory, aten ops) and ``after_view`` (the layout picture of ``x`` and
    the result), and beside them ``compare_verdict`` and ``compare_view`` for the compared operation.

    Args:
        x: the tensor to operate on (default ``torch.arange(100.0, 112.0).reshape(3, 4)``); never modified.
        operations: expressions in ``x`` for the dropdowns (default ``OPERATIONS``).
        max_cells: the most storage cells each picture draws.

    Attributes after each ``update()``:
        outcome: the chosen operation's ``OperationOutcome``; ``compared``: the compared one's (or None).
        report, row, result, picture, scene: the chosen operation's (``OpReport``, ``OpRow``, result tensor,
            ``LayoutPicture`` of x and the result, its ``Scene``); None when it failed.
        layout_model: the result's ``Layout``.
        summary: one line describing the current state (and the compared operation's, after " · compared with ").
    """

    def __init__(self, x=None, operations=None, max_cells: int = 64):
        if x is None:
            x = torch.arange(100.0, 112.0).reshape(3, 4)
        self.x = require_tensor(x, "x", allow_meta=False)
        if operations is None:
            operations = OPERATIONS
        if isinstance(operations, str) or not isinstance(operations, (list, tuple)):
            raise TypeError(f"operations must be a list of expressions (str) in x, got {describe(operations)}")
        if not operations:
            raise ValueError("operations is empty: give at least one expression such as 'x.t()'")
        for i, expression in enumerate(operations):
            require_type(expression, str, f"operations[{i}]", "a str")
        require_positive_int(max_cells, "max_cells")
        self.max_cells = max_cells
        self._operations = list(operations)
        self.scope = f"tl-explorer-{next(_SCOPES)}"
        _ = self.widget  # the dropdowns hold the setting, so the widgets are made now
        self.update()

    def _build(self, widgets):
        """Two operation dropdowns (wired to ``update``), the message, and a verdict and picture per operation."""
        self.operation = widgets.Dropdown(
            options=self._operations,
            value=self._operations[0],
            description="operation",
            layout=widgets.Layout(width="max-content"),
        )
        self.compare = widgets.Dropdown(
            options=[NO_COMPARISON, *self._operations],
            value=NO_COMPARISON,
            description="compare with",
            style={"description_width": "initial"},
            layout=widgets.Layout(width="max-content"),
        )
        self.message = widgets.HTML()
        self.verdict = widgets.HTML()
        self.after_view = widgets.HTML()
        self.compare_verdict = widgets.HTML()
        self.compare_view = widgets.HTML()
        self.compare_panel = widgets.VBox([self.compare_verdict, self.compare_view])
        for control in (self.operation, self.compare):
            control.observe(lambda change: self.update(), names="value")
        side_by_side = widgets.Layout(flex_flow="row wrap", align_items="flex-start", grid_gap="8px 24px")
        box = widgets.VBox(
            [
                widgets.HBox([self.operation, self.compare], layout=widgets.Layout(flex_flow="row wrap")),
                self.message,
                widgets.HBox([widgets.VBox([self.verdict, self.after_view]), self.compare_panel], layout=side_by_side),
            ]
        )
        box.add_class(self.scope)
        return box

    def update(self) -> None:
        """Run the chosen operation and the compared one (each on a fresh copy of ``x``) and redraw everything.

        Never raises: whatever fails (an operation, or drawing an unusual result) is shown in ``message``.
        """
        try:
            self._update()
        except Exception as error:  # noqa: BLE001 - a widget callback must show the problem, not raise it
            self._show(
                OperationOutcome(
                    self.operation.value,
                    f"{self.operation.value} cannot run on this x: {type(error).__name__}: {_first_line(error)}",
                ),
                None,
            )

    def _update(self) -> None:
        outcome = run_operation(self.x, self.operation.value, self.max_cells)
        other = self.compare.value
        compared = None if other == NO_COMPARISON else run_operation(self.x, other, self.max_cells)
        self._show(outcome, compared)

    def _show(self, outcome: OperationOutcome, compared: OperationOutcome | None) -> None:
        """Keep both outcomes and show them: badges, pictures side by side, the message and the summary."""
        self.outcome, self.compared = outcome, compared
        self.report, self.row, self.result = outcome.report, outcome.row, outcome.result
        self.picture, self.scene = outcome.picture, outcome.scene
        self.layout_model = None if outcome.picture is None else outcome.picture.rows[-1].layout
        self.summary = outcome.summary + ("" if compared is None else f" · compared with {compared.summary}")
        failed = outcome.row is None
        self.message.value = verdict_html(outcome) if failed else ""
        self.verdict.value = "" if failed else verdict_html(outcome)
        self.after_view.value = self._picture_html(outcome)
        self.compare_panel.layout.display = "none" if compared is None else None
        self.compare_verdict.value = "" if compared is None else verdict_html(compared)
        self.compare_view.value = "" if compared is None else self._picture_html(compared)

    def _picture_html(self, outcome: OperationOutcome) -> str:
        """An outcome's picture as inline SVG with its hover links, and a copy's sources under it ('' if none)."""
        if outcome.scene is None:
            return ""
        links = hover_css(outcome.picture, self.scope, outcome.source_links())
        return links + self.svg_html(scene=outcome.scene) + sources_html(outcome)


def stride_explorer(storage_size: int = 12, dtype=torch.float32) -> StrideExplorer:
    """An explorer of shape, stride, offset and dtype over a fixed ``torch.arange(100, 100 + storage_size)`` storage.

    Args:
        storage_size: how many elements the storage holds (1 to 4096).
        dtype: the storage's dtype (one of ``DTYPES``; changeable in the explorer).

    Returns:
        A ``StrideExplorer``; as a cell's last expression it displays as widgets.

    Raises:
        TypeError: ``storage_size`` is not an int or ``dtype`` not a torch.dtype.
        ValueError: ``storage_size`` outside 1 to 4096, or a dtype the explorer does not offer.
    """
    return StrideExplorer(storage_size, dtype)


def view_copy_explorer(x=None, operations=None) -> ViewCopyExplorer:
    """An explorer of which operations on ``x`` make views, which copy, and what they allocate.

    Args:
        x: the tensor to operate on (default ``torch.arange(100.0, 112.0).reshape(3, 4)``); never modified.
        operations: expressions in ``x`` for the dropdowns (default ``OPERATIONS``).

    Returns:
        A ``ViewCopyExplorer``; as a cell's last expression it displays as widgets.

    Raises:
        TypeError: ``x`` is not a tensor, or ``operations`` not a list of str.
        ValueError: ``x`` is sparse or meta, or ``operations`` is empty.
    """
    return ViewCopyExplorer(x, operations)


__all__ = [
    "DTYPES",
    "MAX_SOURCES",
    "NO_COMPARISON",
    "OPERATIONS",
    "VERDICT_BADGES",
    "OperationOutcome",
    "StrideExplorer",
    "ViewCopyExplorer",
    "copied_from",
    "hover_css",
    "parse_ints",
    "run_operation",
    "sources_html",
    "stride_explorer",
    "verdict_html",
    "view_copy_explorer",
]
