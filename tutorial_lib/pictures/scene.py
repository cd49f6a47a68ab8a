"""The one drawing model. A picture is planned as a ``Scene``: plain data (rectangles, polygons, lines, arrows
and texts, each with an id and a style name), which ``render_mpl`` draws with matplotlib and ``render_svg``
writes as SVG. Tests assert on scenes, not on what a drawing library made of them.

Coordinates are points (1/72 inch) at scale 1, origin at the top left, y growing downwards. A picture owns its
style sheet (``Scene.styles``: style name -> ``Style``); the renderers know no picture.
"""

from __future__ import annotations

import functools
import math
import re
from dataclasses import dataclass, replace

#: The largest figure a scene is drawn at (width, height in inches); bigger scenes are scaled down.
MAX_FIGURE_INCHES = (30.0, 60.0)
#: Font families: DejaVu ships with matplotlib; the generic name is the SVG viewer's fallback.
FAMILIES = {"mono": ("DejaVu Sans Mono", "monospace"), "sans": ("DejaVu Sans", "sans-serif")}
#: Width of one monospace character in font sizes: DejaVu Sans Mono advances 0.602, and Agg rounds each
#: advance to whole pixels, which at 72-100 dpi makes a line up to ~8% wider.
MONO_CHAR_WIDTH = 0.66
#: DejaVu's ascent in font sizes: from a text's top to its first baseline (and 1 - ASCENT below the last).
ASCENT = 0.76
ARROW_HEAD = (6.0, 2.5)  # length and half width of an arrow head, in points


@dataclass(frozen=True, slots=True)
class Style:
    """How items of one style look. Shapes use fill/edge/width/dash/hatch; texts use family to line_spacing.

    ``dash`` is (on, off) in line widths, as matplotlib scales dashes; ``zorder`` stacks the style's items
    (higher on top; items of one zorder keep their scene order); ``halo`` puts a white background under a text.
    """

    fill: str = "none"
    edge: str = "none"
    width: float = 0.0
    dash: tuple[float, float] | None = None
    hatch: bool = False
    zorder: int = 1
    family: str = "sans"
    size: float = 8.0
    weight: str = "normal"
    color: str = "black"
    halo: bool = False
    line_spacing: float = 1.2


@dataclass(frozen=True, slots=True)
class Rect:
    """A rectangle: top-left corner, width and height."""

    x: float
    y: float
    w: float
    h: float
    style: str
    id: str = ""


@dataclass(frozen=True, slots=True)
class _Path:
    """The fields of ``Polygon``, ``Line`` and ``Arrow``, which the renderers tell apart by their class."""

    points: tuple
    style: str
    id: str = ""


@dataclass(frozen=True, slots=True)
class Polygon(_Path):
    """A closed, filled shape through ``points``."""


@dataclass(frozen=True, slots=True)
class Line(_Path):
    """An open polyline through ``points``."""


@dataclass(frozen=True, slots=True)
class Arrow(_Path):
    """A polyline through ``points`` with a filled head (the style's edge colour) at the last point."""


@dataclass(frozen=True, slots=True)
class Text:
    """Text at (x, y); ``anchor`` is start|middle|end across, ``baseline`` top|middle|bottom of the block.

    ``size`` overrides the style's (text shrunk to fit a cell). ``rotation`` (degrees, counter-clockwise) turns
    the text about (x, y), where it then starts, centred across: an upright label standing on that point.
    """

    x: float
    y: float
    text: str
    style: str
    id: str = ""
    anchor: str = "start"
    baseline: str = "top"
    size: float | None = None
    rotation: float = 0.0


@dataclass(frozen=True)
class Scene:
    """Everything one picture draws: its size in points, its items in drawing order, its style sheet, and a
    one-line ``title`` (the picture's text summary: the SVG's ``<title>``)."""

    width: float
    height: float
    items: tuple
    styles: dict
    title: str = ""

    def ids(self) -> dict:
        """``{id: item}`` for every item that has an id."""
        return {item.id: item for item in self.items if item.id}

    def texts(self) -> list[tuple[str, str]]:
        """``(id, text)`` of every text, in drawing order."""
        return [(item.id, item.text) for item in self.items if isinstance(item, Text)]

    def scale(self) -> float:
        """The factor (at most 1) that fits the scene in ``MAX_FIGURE_INCHES``."""
        return min(1.0, MAX_FIGURE_INCHES[0] * 72 / self.width, MAX_FIGURE_INCHES[1] * 72 / self.height)


def size_of(item: Text, styles: dict) -> float:
    """The font size of a text item, in points."""
    return item.size if item.size is not None else styles[item.style].size


@functools.lru_cache(maxsize=4096)
def text_width(text: str, family: str = "mono", size: float = 8.0, weight: str = "normal") -> float:
    """Width in points of the longest line of ``text``: the one measuring rule of every picture.

    Monospace text is counted (``MONO_CHAR_WIDTH`` per character). Sans-serif text is measured with DejaVu
    Sans (its glyphs, such as ⚠, differ in width), plus 8% for Agg rounding each advance to whole pixels.
    """
    lines = visible(text).split("\n")  # measured as drawn: both renderers draw ``visible(text)``
    if family == "mono":
        return max(len(line) for line in lines) * size * MONO_CHAR_WIDTH
    from matplotlib.font_manager import FontProperties
    from matplotlib.textpath import TextToPath

    prop = FontProperties(family=FAMILIES[family], weight=weight, size=size)
    measure = TextToPath().get_text_width_height_descent
    return max(measure(line, prop, ismath=False)[0] if line else 0.0 for line in lines) * 1.08


# Characters XML 1.0 cannot hold at all, even escaped (C0 controls but tab, newline and carriage return;
# surrogates; U+FFFE, U+FFFF), and which no font draws.
_NOT_XML = re.compile("[\x00-\x08\x0b\x0c\x0e-\x1f\ud800-\udfff\ufffe\uffff]")


def visible(text: str) -> str:
    """``text`` with the characters XML cannot hold written as escapes (``\\x01``), for both renderers."""
    return _NOT_XML.sub(lambda match: ascii(match.group())[1:-1], text)  # as Python writes them


def escape(text: str) -> str:
    """``text`` safe inside SVG/XML text or attributes (after ``visible``)."""
    return visible(text).replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;").replace('"', "&quot;")


def arrow_head(points) -> tuple:
    """The triangle of an arrow head at the last of ``points``, pointing along the last segment."""
    (px, py), (qx, qy) = points[-2], points[-1]
    length = max(math.hypot(qx - px, qy - py), 1e-9)
    dx, dy = (qx - px) / length, (qy - py) / length
    long, half = ARROW_HEAD
    bx, by = qx - long * dx, qy - long * dy
    return ((qx, qy), (bx - half * dy, by + half * dx), (bx + half * dy, by - half * dx))


def rect_points(item: Rect) -> tuple:
    """The four corners of a rectangle."""
    return ((item.x, item.y), (item.x + item.w, item.y), (item.x + item.w, item.y + item.h), (item.x, item.y + item.h))


def in_drawing_order(scene: Scene) -> list[tuple[str, type, list]]:
    """Items in runs ``(style, kind, items)`` by zorder, then scene order: both renderers stack them so."""
    runs: dict[tuple[str, type], list] = {}
    for item in scene.items:
        runs.setdefault((item.style, Polygon if isinstance(item, Rect) else type(item)), []).append(item)
    # sorted() is stable: runs of one zorder keep the order they first appear in
    return [(*key, runs[key]) for key in sorted(runs, key=lambda key: scene.styles[key[0]].zorder)]


def _moved(item, dx: float, dy: float, style: str, ident: str):
    if isinstance(item, (Rect, Text)):
        return replace(item, x=item.x + dx, y=item.y + dy, style=style, id=ident)
    return replace(item, points=tuple((x + dx, y + dy) for x, y in item.points), style=style, id=ident)


def side_by_side(scenes, captions=None, gap: float = 18.0) -> Scene:
    """Scenes next to each other, tops aligned, each under its caption (for comparisons the text makes).

    Item ids become ``<k>/<id>`` (k = the panel, from 0) so they stay unique; a style two panels define
    differently is renamed ``<k>/<style>``. The title joins "caption: title" of the panels with " | ".
    """
    scenes = list(scenes)
    if not scenes or not all(isinstance(s, Scene) for s in scenes):
        raise TypeError("scenes must be a non-empty list of Scene")
    captions = list(captions) if captions is not None else [""] * len(scenes)
    if len(captions) != len(scenes) or not all(isinstance(c, str) for c in captions):
        raise ValueError(f"captions must be one str per scene ({len(scenes)}), got {captions!r}")
    styles = {"panel-caption": Style(family="sans", size=10.0, weight="bold", zorder=9)}
    top = 16.0 if any(captions) else 0.0
    items, x = [], 0.0
    for k, (scene, caption) in enumerate(zip(scenes, captions)):
        if caption:
            items.append(Text(x + 4, 2, caption, "panel-caption", f"{k}/caption"))
        for item in scene.items:
            look = scene.styles[item.style]
            style = item.style if styles.get(item.style, look) == look else f"{k}/{item.style}"
            styles[style] = look
            items.append(_moved(item, x, top, style, f"{k}/{item.id}" if item.id else ""))
        x += scene.width + gap
    title = " | ".join(f"{c}: {s.title}" if c and s.title else c or s.title for s, c in zip(scenes, captions))
    return Scene(x - gap, top + max(s.height for s in scenes), tuple(items), styles, title)
