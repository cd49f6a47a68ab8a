"""Chapter 4's two questions as a 2 x 2 picture: does the result share ``x``'s memory, and does a gradient reach
``x`` through it? Each expression (``x.clone()``, ``x.detach()``, ``x.data``, ...) is a chip in the cell where
torch put it (``facts.sharing.sharing_of``), never where a table says."""

from __future__ import annotations

from ..common.checks import require_bool
from ..facts.sharing import Sharing, sharing_of
from .palette import FAINT, INK, MONO, MUTED, PAPER, SANS, STORAGE, TEXT_PT
from .render_mpl import render, require_axes, with_summary
from .scene import Rect, Scene, Style, Text, text_width

NOTE_PT = 7.5
PAD, CHIP_GAP, CHIP_PAD = 10.0, 6.0, 5.0
COLUMN_HEAD, TITLE_HEIGHT = 24.0, 20.0
#: (key, header) of the rows and the columns, in drawing order.
ROWS = (("shared", "shares x's memory"), ("own", "memory of its own"))
COLUMNS = (("reaches", "a gradient reaches x"), ("stops", "no gradient reaches x"))

STYLES = {
    "title": Style(family=SANS, size=TEXT_PT + 1, weight="bold", color=INK, zorder=5),
    "header": Style(family=SANS, size=TEXT_PT, weight="bold", color=INK, zorder=5),
    "cell": Style(fill=PAPER, edge=MUTED, width=0.8, zorder=1),
    "cell-shared": Style(fill=STORAGE, edge=MUTED, width=0.8, zorder=1),  # storage grey: x's memory
    "chip": Style(fill=PAPER, edge=INK, width=0.8, zorder=2),
    "expression": Style(family=MONO, size=TEXT_PT, color=INK, zorder=5),
    "note": Style(family=SANS, size=NOTE_PT, color=MUTED, zorder=5),
    "empty": Style(family=SANS, size=NOTE_PT, color=FAINT, zorder=5),
}


def _where(row: Sharing) -> tuple[str, str]:
    return ("shared" if row.shares_memory else "own", "reaches" if row.gradient_reaches else "stops")


def _notes(row: Sharing, show_counter: bool) -> list[str]:
    """The small lines under an expression: how autograd sees the result, and (shared memory) its counter."""
    if row.grad_fn is not None:
        notes = [f"grad_fn {row.grad_fn}"]
    elif row.requires_grad:
        notes = ["a leaf that requires grad"]
    else:
        notes = ["requires no grad"]
    if show_counter and row.shares_memory and row.shares_counter is not None:
        notes.append("x's version counter" if row.shares_counter else "its own version counter")
    return notes


def sharing_summary(rows) -> str:
    """The picture's one line: each cell and the expressions in it."""
    parts = []
    for row_key, row_head in ROWS:
        for column_key, column_head in COLUMNS:
            names = [row.name for row in rows if _where(row) == (row_key, column_key)]
            where = f"{row_head}, {column_head}"
            parts.append(f"{where}: {', '.join(names) if names else 'none'}")
    return "; ".join(parts)


def sharing_scene(rows, show_counter: bool = False) -> Scene:
    """The 2 x 2 picture of ``rows`` (``Sharing`` facts, see ``draw_sharing``) as a ``Scene``.

    Ids: ``cell:<row>:<column>`` (row ``shared``/``own``, column ``reaches``/``stops``), ``chip:<name>`` with its
    texts ``expression:<name>`` and ``note:<name>:<k>``, headers ``row:<row>`` and ``column:<column>``.
    """
    rows = tuple(rows)
    chips = {}  # name -> (width, height, notes)
    for row in rows:
        notes = _notes(row, show_counter)
        wide = max([text_width(row.name, MONO, TEXT_PT)] + [text_width(note, SANS, NOTE_PT) for note in notes])
        chips[row.name] = (wide + 2 * CHIP_PAD, TEXT_PT * 1.3 + len(notes) * NOTE_PT * 1.25 + 2 * CHIP_PAD, notes)
    column_widths = {
        key: max(
            [text_width(head, SANS, TEXT_PT) + 2 * PAD]
            + [chips[row.name][0] + 2 * PAD for row in rows if _where(row)[1] == key]
        )
        for key, head in COLUMNS
    }
    row_heights = {  # the taller of the row's two stacks of chips
        key: max(
            [36.0]
            + [
                sum(chips[row.name][1] + CHIP_GAP for row in rows if _where(row) == (key, column)) - CHIP_GAP + 2 * PAD
                for column, _ in COLUMNS
            ]
        )
        for key, _ in ROWS
    }
    head_width = max(text_width(head, SANS, TEXT_PT, "bold") for _, head in ROWS) + 2 * PAD
    items = [Text(PAD, PAD, "what the result shares with x", "title", "title")]
    top = PAD + TITLE_HEIGHT
    x = PAD + head_width
    for key, head in COLUMNS:
        centre = x + column_widths[key] / 2
        items.append(Text(centre, top + COLUMN_HEAD / 2, head, "header", f"column:{key}", "middle", "middle"))
        x += column_widths[key]
    y = top + COLUMN_HEAD
    for row_key, row_head in ROWS:
        height = row_heights[row_key]
        items.append(Text(PAD, y + height / 2, row_head, "header", f"row:{row_key}", baseline="middle"))
        x = PAD + head_width
        for column_key, _ in COLUMNS:
            width = column_widths[column_key]
            style = "cell-shared" if row_key == "shared" else "cell"
            items.append(Rect(x, y, width, height, style, f"cell:{row_key}:{column_key}"))
            chip_y = y + PAD
            inside = [row for row in rows if _where(row) == (row_key, column_key)]
            for row in inside:
                _, chip_h, notes = chips[row.name]  # the chips of a column are one width: the widest
                items.append(Rect(x + PAD, chip_y, width - 2 * PAD, chip_h, "chip", f"chip:{row.name}"))
                items.append(
                    Text(x + PAD + CHIP_PAD, chip_y + CHIP_PAD, row.name, "expression", f"expression:{row.name}")
                )
                line_y = chip_y + CHIP_PAD + TEXT_PT * 1.3
                for k, note in enumerate(notes):
                    items.append(Text(x + PAD + CHIP_PAD, line_y, note, "note", f"note:{row.name}:{k}"))
                    line_y += NOTE_PT * 1.25
                chip_y += chip_h + CHIP_GAP
            if not inside:
                centre = (x + width / 2, y + height / 2)
                items.append(Text(*centre, "none", "empty", f"empty:{row_key}:{column_key}", "middle", "middle"))
            x += width
        y += height
    width = PAD + head_width + sum(column_widths.values()) + PAD
    return Scene(width, y + PAD, tuple(items), STYLES, sharing_summary(rows))


def draw_sharing(x=None, ways=None, *, show_counter: bool = False, ax=None):
    """Which expressions share ``x``'s memory, and through which a gradient reaches ``x``: a 2 x 2 picture.

    Rows: the result shares ``x``'s memory (grey: ``x``'s storage) or has memory of its own. Columns: a gradient
    of the result reaches ``x`` or not. Each expression is a chip in its cell, with how autograd sees the result
    (its ``grad_fn``, or a leaf that requires grad, or no grad). Every placement is computed by running torch
    (``tl.sharing_of``: data pointers and strides, a real ``torch.autograd.grad``), never typed in.

    Args:
        x: the tensor to start from; None: chapter 4's leaf ``torch.tensor([1.0, 2.0, 3.0], requires_grad=True)``.
        ways: ``{name: function of x}``; None: ``x`` itself, ``x.clone()``, ``x.detach()``, ``x.data``,
            ``copy.copy(x)``, ``x.detach().clone()``.
        show_counter: also say, for results that share ``x``'s memory, whose version counter they use (an
            in-place write through them, tried on a fresh tensor like ``x``).
        ax: a matplotlib Axes to draw into, or None for a new figure sized to fit.

    Returns:
        The matplotlib Figure, with ``fig.summary`` (one line: each cell and its expressions; a notebook shows it as
        the figure's text), ``fig.scene`` and
        ``fig.sharing`` (the ``Sharing`` facts drawn).

    Raises:
        TypeError, ValueError: as ``tl.sharing_of``; ``show_counter`` not a bool, ``ax`` not a matplotlib Axes.
    """
    require_bool(show_counter, "show_counter")
    require_axes(ax)
    rows = sharing_of(x, ways)
    scene = sharing_scene(rows, show_counter=show_counter)
    fig = with_summary(render(scene, ax=ax), scene.title)
    fig.scene, fig.sharing = scene, rows
    return fig
