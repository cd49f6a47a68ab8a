"""matplotlib output: figures made without pyplot (which still show once in Jupyter when a cell returns them),
their PNG bytes, and the check of an ``ax`` argument."""

from __future__ import annotations

import io
from functools import partial

from ..common.checks import describe, require_type
from .scene import FAMILIES, Arrow, Polygon, Scene, Text, arrow_head, in_drawing_order, rect_points, size_of, visible


def png_bytes(fig, dpi: float = 100.0) -> bytes:
    """Render a figure to PNG bytes (savefig picks the Agg canvas itself; no pyplot involved)."""
    buffer = io.BytesIO()
    fig.savefig(buffer, format="png", dpi=dpi)
    return buffer.getvalue()


#: A figure is shown at 100 pixels an inch and stored with twice as many pixels each way, so that it is sharp on a
#: high-DPI screen (the notebook's output says the width and height to show it at).
DISPLAY_DPI, PIXEL_DENSITY = 100.0, 2


def display_png(fig) -> tuple[bytes, dict]:
    """What Jupyter shows for a figure: PNG bytes at ``PIXEL_DENSITY`` times ``DISPLAY_DPI``, and the size in CSS
    pixels to show them at (IPython takes a ``(data, metadata)`` pair from ``_repr_png_``)."""
    width, height = (round(inches * DISPLAY_DPI) for inches in fig.get_size_inches())
    return png_bytes(fig, dpi=DISPLAY_DPI * PIXEL_DENSITY), {"width": width, "height": height}


def bare_figure(width_inches: float, height_inches: float):
    """A ``matplotlib.figure.Figure`` (not pyplot's) with one axes filling it, displayable on its own.

    Nothing global is registered, so there is no too-many-figures warning and no second copy from the
    inline backend when a notebook cell returns it. Without pyplot, IPython knows no PNG formatter for a
    Figure, so this one carries its own ``_repr_png_`` (``display_png``: sharp on high-DPI screens).
    """
    from matplotlib.figure import Figure

    fig = Figure(figsize=(width_inches, height_inches))
    fig._repr_png_ = partial(display_png, fig)
    return fig, fig.add_axes((0, 0, 1, 1))


def require_axes(ax, name: str = "ax"):
    """Return ``ax`` if it is None or a matplotlib Axes, else raise TypeError naming ``name``."""
    if ax is not None:
        from matplotlib.axes import Axes

        require_type(ax, Axes, name, "a matplotlib Axes or None")
    return ax


_ALIGN = {"start": "left", "middle": "center", "end": "right", "top": "top", "bottom": "bottom"}
_HALO = {"boxstyle": "round,pad=0.1", "facecolor": "white", "edgecolor": "none", "alpha": 0.85}


def _figure_for(scene: Scene, ax, fig):
    """The figure and Axes to draw on, and the scale of a point there (see ``render``)."""
    if ax is not None:
        fig, box = ax.get_figure(root=True), ax.get_position()
        fig_w, fig_h = fig.get_size_inches()
        # Equal aspect keeps a point the same length across and down, so text fits its boxes; the axes box
        # shrinks to fit (adjusting the limits instead would log a warning).
        ax.set_aspect("equal", adjustable="box")
        return fig, ax, min(box.width * fig_w * 72 / scene.width, box.height * fig_h * 72 / scene.height)
    scale = scene.scale()
    size = (scene.width * scale / 72, scene.height * scale / 72)
    if fig is None:
        return (*bare_figure(*size), scale)
    fig.clear()
    fig.set_size_inches(size)
    return fig, fig.add_axes((0, 0, 1, 1)), scale


def render(scene, ax=None, fig=None):
    """Draw a ``Scene`` with matplotlib and return the figure.

    With neither ``ax`` nor ``fig``, on a new figure of the scene's size (scaled down to
    ``MAX_FIGURE_INCHES``); with ``fig``, that figure is cleared and resized first (explorers reuse one);
    with ``ax``, into that Axes at equal aspect, scaled to fit it. Items of one style become one collection
    (gid = the style name), so a graph of a thousand boxes draws in one pass; each text is one artist whose
    gid is its id.
    """
    from matplotlib.collections import LineCollection, PolyCollection
    from matplotlib.figure import Figure
    from matplotlib.font_manager import FontProperties
    from matplotlib.text import Text as TextArtist
    from matplotlib.transforms import TransformedPatchPath

    require_type(scene, Scene, "scene", "a Scene")
    if fig is not None and not isinstance(fig, Figure):
        raise TypeError(f"fig must be a matplotlib Figure or None, got {describe(fig)}")
    fig, ax, scale = _figure_for(scene, require_axes(ax), fig)
    ax.set_axis_off()
    ax.set(xlim=(0, scene.width), ylim=(scene.height, 0))
    # Texts share one clip path: left unset, the Axes builds fresh transforms for every artist, which is most of
    # the cost of a few hundred texts.
    clip = TransformedPatchPath(ax.patch)
    for name, kind, items in in_drawing_order(scene):
        style = scene.styles[name]
        if kind is Text:
            for item in items:
                size = size_of(item, scene.styles) * scale
                turned = bool(item.rotation)  # an upright label standing on (x, y)
                artist = TextArtist(
                    item.x,
                    item.y,
                    visible(item.text),
                    color=style.color,
                    ha="center" if turned else _ALIGN[item.anchor],
                    va="bottom" if turned else _ALIGN[item.baseline],
                    rotation=item.rotation,
                    fontproperties=FontProperties(family=FAMILIES[style.family], weight=style.weight, size=size),
                    linespacing=style.line_spacing,
                    zorder=style.zorder,
                    gid=visible(item.id) if item.id else None,  # ids hold names: XML-safe, as in render_svg
                    bbox=_HALO if style.halo else None,
                    clip_on=False,
                )
                artist.set_clip_path(clip)
                ax.add_artist(artist)
            continue
        width = style.width * max(0.4, scale)
        edge = style.edge if width else "none"
        look = {"linewidths": width, "edgecolors": edge, "linestyles": [(0, style.dash)] if style.dash else "solid"}
        if kind is Polygon:
            shapes = [item.points if isinstance(item, Polygon) else rect_points(item) for item in items]
            drawn = {name: PolyCollection(shapes, facecolors=style.fill, hatch="///" if style.hatch else None, **look)}
        else:
            drawn = {name: LineCollection([item.points for item in items], **look)}
        if kind is Arrow:
            heads = [arrow_head(item.points) for item in items]
            drawn[f"{name}-heads"] = PolyCollection(heads, facecolors=style.edge, edgecolors="none")
        for gid, collection in drawn.items():
            collection.set(gid=gid, zorder=style.zorder)
            ax.add_collection(collection, autolim=False)  # the limits are set: skip updating data limits
    return fig


_SUMMARY_CLASSES: dict = {}


def with_summary(fig, summary: str):
    """``fig`` with ``fig.summary = summary``, which a notebook then shows as the figure's ``text/plain`` (what a
    screen reader reads, a text-only reading copy shows and nbval compares) instead of ``<Figure size …>``; so a
    cell need not print the summary above the picture. A figure the caller made (``ax=`` given) keeps its class."""
    fig.summary = summary
    if getattr(fig, "_repr_png_", None) is None:  # not one of ours (bare_figure): leave the caller's figure be
        return fig
    base = type(fig)
    if base not in _SUMMARY_CLASSES:

        def _repr_pretty_(self, printer, cycle):
            printer.text(self.summary)

        _SUMMARY_CLASSES[base] = type(f"Summarised{base.__name__}", (base,), {"_repr_pretty_": _repr_pretty_})
    fig.__class__ = _SUMMARY_CLASSES[base]
    return fig
