"""The course's one visual language: one font family per use, one meaning per colour, a smallest text size.

Every picture's style sheet takes its colours from here, so a colour means the same thing in every picture:

- a tensor's own colour (``tensor_colour(k)``) marks that tensor wherever it is drawn: its row and grid in a
  layout, its chip in a graph. These light tints are used for nothing else, and none is of a verdict's hue (no
  blue, orange, vermilion or teal), so a view drawn in a tint never looks like a COPY or a copy like a VIEW;
- ``STALE`` (vermilion) means "changed after it was saved / written in place / an error backward raises": hazard
  borders, in-place edges, errors, IN-PLACE badges;
- ``VIEW`` (blue) and ``COPY`` (orange) are the two verdicts of chapter 2, in badges and op tables; ``ALIAS``
  (teal) the third: the input's memory without its version counter (``x.data``, ``copy.copy(x)``). Each has its
  text colour in ``VERDICT_COLOURS``; they colour verdicts only, never a tensor;
- ``STORAGE`` and the greys are storage cells, frames and unread or unknown cells;
- ``MEMORY_KINDS`` colour the bands of memory pictures (parameters, gradients, ...).

The hues are Paul Tol's colour-blind-safe schemes (https://personal.sron.nl/~pault/); colour is never the only
cue: every coloured thing also carries a word, a border style or a shape.
"""

from __future__ import annotations

#: Text families: sans-serif for prose-like labels, monospace where characters must line up (code, numbers).
SANS, MONO = "sans", "mono"
#: No text in a picture is drawn smaller than this (points at scale 1): about 10 px at 100% zoom.
MIN_TEXT_PT = 7.0
TEXT_PT = 8.5
TITLE_PT = 10.0

INK = "#222222"  # text and outlines
MUTED = "#555555"  # secondary text, edges of the graph
FAINT = "#999999"  # unread and unknown cells' borders
STORAGE = "#e6e6e6"
PAPER = "#ffffff"

STALE = "#cc3311"  # Tol vibrant red
VIEW = "#0077bb"  # Tol vibrant blue
COPY = "#ee7733"  # Tol vibrant orange
ALIAS = "#009988"  # Tol vibrant teal
#: Each verdict's badge: (background, text colour), shared by the view/copy explorer's badge and the op table's
#: verdict chips, so a verdict looks the same wherever it is shown.
VERDICT_COLOURS = {
    "view": (VIEW, PAPER),
    "alias": (ALIAS, "#000000"),  # black: white (3.5:1) and INK (4.48:1) on this teal are too faint for 13-px text
    "copy": (COPY, INK),
    "in-place": (STALE, PAPER),
    "same tensor": (STORAGE, INK),
    "existing memory": (PAPER, INK),
}

#: Light tints for tensors, from Paul Tol's schemes ("light", "PRGn", the discrete rainbow, "iridescent",
#: "YlOrBr"): yellows, greens, lilacs, pink. Twelve before one repeats, each at least 35 degrees of CIELAB hue from
#: every verdict colour and far from them with protanopia and deuteranopia too, dark text readable on each
#: (tests/test_palette.py). The first ones differ most, since most pictures draw two or three tensors.
TENSOR_TINTS = (
    "#eedd88",  # light yellow
    "#c2a5cf",  # lilac
    "#90c987",  # green
    "#ffaabb",  # pink
    "#ddecbf",  # pale green
    "#9d7db2",  # purple
    "#f7f040",  # bright yellow
    "#e7d4e8",  # pale lilac
    "#5aae61",  # deep green
    "#fff7bc",  # pale yellow
    "#d0e7ca",  # pale grey-green
    "#d1bbd7",  # light purple
)

#: Bands of memory pictures, by kind (facts.memory.KINDS; Tol's "muted" scheme), and the allocator's layers:
#: distinct from the tensor tints and the verdicts.
MEMORY_KINDS = {
    "parameter": "#332288",
    "gradient": "#88ccee",
    "optimizer state": "#aa4499",
    "activation": "#117733",
    "temporary": "#ddcc77",
    "scratch": "#999933",
    "unknown": "#dddddd",
    "from before the block": "#cc6677",
    "allocator's rounding": "#bbbbbb",
}


def tensor_colour(index: int) -> str:
    """The colour of the ``index``-th tensor of a picture (0-based); they repeat only after twelve."""
    if isinstance(index, bool) or not isinstance(index, int) or index < 0:
        raise ValueError(f"index must be an int >= 0, got {index!r}")
    return TENSOR_TINTS[index % len(TENSOR_TINTS)]


def tint(colour: str, share: float) -> str:
    """``colour`` mixed with white: ``share`` of the colour (0 gives white, 1 the colour), as ``#rrggbb``."""
    if not (isinstance(colour, str) and len(colour) == 7 and colour.startswith("#")):
        raise ValueError(f"colour must be a '#rrggbb' string, got {colour!r}")
    if isinstance(share, bool) or not isinstance(share, (int, float)) or not 0 <= share <= 1:
        raise ValueError(f"share must be a number from 0 to 1, got {share!r}")
    channels = (int(colour[i : i + 2], 16) for i in (1, 3, 5))
    return "#" + "".join(f"{round(255 - (255 - c) * share):02x}" for c in channels)
