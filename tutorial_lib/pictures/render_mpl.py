"""matplotlib output: figures made without pyplot (which still show once in Jupyter when a cell returns them),
their PNG bytes, and the check of an ``ax`` argument."""

from __future__ import annotations

import io
from functools import partial

from ..common.checks import describe


def png_bytes(fig, dpi: float = 100.0) -> bytes:
    """Render a figure to PNG bytes (savefig picks the Agg canvas itself; no pyplot involved)."""
    buffer = io.BytesIO()
    fig.savefig(buffer, format="png", dpi=dpi)
    return buffer.getvalue()


def bare_figure(width_inches: float, height_inches: float, full: bool = True):
    """A ``matplotlib.figure.Figure`` (not pyplot's) with one axes, displayable on its own.

    ``full``: the axes fills the figure (pictures drawn in points); otherwise it is an ordinary subplot
    with room for tick labels and axis titles (charts).

    Nothing global is registered, so there is no too-many-figures warning and no second copy from the
    inline backend when a notebook cell returns it. Without pyplot, IPython knows no PNG formatter for a
    Figure, so this one carries its own ``_repr_png_``.
    """
    from matplotlib.figure import Figure

    fig = Figure(figsize=(width_inches, height_inches))
    ax = fig.add_axes((0, 0, 1, 1)) if full else fig.add_subplot()
    fig._repr_png_ = partial(png_bytes, fig)
    return fig, ax


def require_axes(ax, name: str = "ax"):
    """Return ``ax`` if it is None or a matplotlib Axes, else raise TypeError naming ``name``."""
    if ax is None:
        return None
    from matplotlib.axes import Axes

    if not isinstance(ax, Axes):
        raise TypeError(f"{name} must be a matplotlib Axes or None, got {describe(ax)}")
    return ax
