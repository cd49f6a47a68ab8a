"""What every live explorer shares: one way to display, a lazily built widget, and its picture as a ``Scene``.

An explorer keeps its current picture as ``scene`` (plain data, see ``pictures/scene.py``). The widget shows
that scene as inline SVG (``svg_html``): text stays text, nothing is rasterised, and a redraw takes a few
milliseconds. ``figure`` draws the same scene with matplotlib into one reused figure, when asked.

Jupyter displays an explorer through ``_repr_mimebundle_``: the widget, with ``plain_text()`` as the text
form, which is what a notebook stores for readers without widgets and what nbval compares.
ipywidgets and matplotlib are imported only when a widget or a figure is made.
"""

from __future__ import annotations

from ..pictures.render_svg import svg


class Explorer:
    """Base of the live explorers: a lazily built ipywidgets view, a summary, the current picture as a Scene.

    Subclasses set ``summary`` and ``scene`` (None when there is nothing to draw) and build their widgets in
    ``_build(widgets)``, which returns the view and is called once, with ipywidgets as its argument.
    """

    summary = ""
    scene = None
    _widget = None
    _figure = None

    def plain_text(self) -> str:
        """What nbval and text-only frontends see: the explorer's class and its summary."""
        return f"{type(self).__name__}: {self.summary}"

    def _build(self, widgets):
        """Make the explorer's widgets and return the one that holds them all."""
        raise NotImplementedError

    @property
    def widget(self):
        """The ipywidgets view, built on first use."""
        if self._widget is None:
            import ipywidgets as widgets

            self._widget = self._build(widgets)
        return self._widget

    def svg_html(self, faded: bool = False, scene=None) -> str:
        """``scene`` (default: the current one) as inline SVG HTML, at its own size but never wider than the page.

        ``faded`` shows a picture that no longer matches the setting (kept so the layout does not jump).
        """
        scene = self.scene if scene is None else scene
        if scene is None:
            return ""
        # The renderer sizes the <svg> from scene.width/height; the style only lets a narrow page shrink it.
        picture = svg(scene).replace("<svg ", '<svg style="max-width:100%;height:auto" ', 1)
        return f'<div style="overflow-x:auto;{"opacity:0.3" if faded else ""}">{picture}</div>'

    @property
    def figure(self):
        """The current scene drawn with matplotlib, into one figure reused on every call; None without a scene."""
        if self.scene is None:
            return None
        from ..pictures.render_mpl import render

        self._figure = render(self.scene, fig=self._figure)
        return self._figure

    def _repr_mimebundle_(self, **kwargs) -> dict:
        bundle = self.widget._repr_mimebundle_(**kwargs)
        bundle["text/plain"] = self.plain_text()
        return bundle
