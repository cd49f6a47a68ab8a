"""Write a ``Scene`` as a standalone SVG document: text stays text (crisp, searchable), every item with an id
carries it, and nothing is rasterised, so live widgets can redraw in a few milliseconds."""

from __future__ import annotations

from ..common.checks import require_type
from .scene import ASCENT, FAMILIES, Arrow, Polygon, Rect, Scene, Text, arrow_head, escape, in_drawing_order, size_of


def _points(points) -> str:
    return " ".join(f"{x:.1f},{y:.1f}" for x, y in points)


def _stroke(style) -> str:
    if style.edge == "none" or style.width <= 0:
        return ' stroke="none"'
    stroke = f' stroke="{style.edge}" stroke-width="{style.width:g}"'
    if style.dash:
        stroke += f' stroke-dasharray="{style.dash[0] * style.width:.2f},{style.dash[1] * style.width:.2f}"'
    return stroke


def _ident(item) -> str:
    return f' id="{escape(item.id)}"' if item.id else ""


def _shape(item, id_attribute: str) -> str:
    if isinstance(item, Rect):
        return f'<rect{id_attribute} x="{item.x:.2f}" y="{item.y:.2f}" width="{item.w:.2f}" height="{item.h:.2f}"/>'
    tag = "polygon" if isinstance(item, Polygon) else "polyline"
    return f'<{tag}{id_attribute} points="{_points(item.points)}"/>'


def _text(item: Text, style, size: float) -> str:
    lines = item.text.split("\n")
    step = style.line_spacing * size
    if item.rotation:
        # Standing on (x, y): turned about it, starting there, centred across (as matplotlib's va="bottom").
        turn = f"rotate({-item.rotation:g} {item.x:.2f} {item.y:.2f})"
        where = f'x="{item.x:.2f}" y="{item.y:.2f}" text-anchor="start" dominant-baseline="central" transform="{turn}"'
    else:
        block = size + (len(lines) - 1) * step
        top = {"top": item.y, "middle": item.y - block / 2, "bottom": item.y - block}[item.baseline]
        where = f'x="{item.x:.2f}" y="{top + ASCENT * size:.2f}" text-anchor="{item.anchor}"'
    weight = f' font-weight="{style.weight}"' if style.weight != "normal" else ""
    font = f'font-family="{", ".join(FAMILIES[style.family])}" font-size="{size:.2f}"{weight}'
    body = escape(item.text)
    if len(lines) > 1:
        body = "".join(
            f'<tspan x="{item.x:.2f}" dy="{step if i else 0:.2f}">{escape(line)}</tspan>'
            for i, line in enumerate(lines)
        )
    halo = ""
    if style.halo:  # a white outline drawn first, as a copy (paint-order is not supported everywhere)
        halo = f'<text {where} {font} fill="white" stroke="white" stroke-width="3" xml:space="preserve">{body}</text>'
    return f'{halo}<text{_ident(item)} {where} {font} fill="{style.color}" xml:space="preserve">{body}</text>'


def svg(scene: Scene) -> str:
    """The scene as an SVG document sized in points (scaled down to ``MAX_FIGURE_INCHES``), its title as
    ``<title>``. Items of one style share a ``<g class="style">``; items with an id carry it."""
    require_type(scene, Scene, "scene", "a Scene")
    scale = scene.scale()
    out = [
        f'<svg xmlns="http://www.w3.org/2000/svg" width="{scene.width * scale:.1f}pt" '
        f'height="{scene.height * scale:.1f}pt" viewBox="0 0 {scene.width:.1f} {scene.height:.1f}" role="img">'
        f'<title>{escape(scene.title)}</title><rect width="100%" height="100%" fill="white"/>'
    ]
    if any(style.hatch for style in scene.styles.values()):
        out.append(
            '<defs><pattern id="hatch" width="5" height="5" patternUnits="userSpaceOnUse" '
            'patternTransform="rotate(45)">'
            '<line x1="0" y1="0" x2="0" y2="5" stroke="#333" stroke-width="1"/></pattern></defs>'
        )
    for name, kind, items in in_drawing_order(scene):
        style = scene.styles[name]
        if kind is Text:
            body = "".join(_text(item, style, size_of(item, scene.styles)) for item in items)
            out.append(f'<g class="{escape(name)}">{body}</g>')
            continue
        body = "".join(_shape(item, _ident(item)) for item in items)
        fill = style.fill if kind is Polygon else "none"
        out.append(f'<g class="{escape(name)}" fill="{fill}"{_stroke(style)}>{body}</g>')
        if kind is Polygon and style.hatch:
            shapes = "".join(_shape(item, "") for item in items)
            out.append(f'<g fill="url(#hatch)" fill-opacity="0.45" stroke="none">{shapes}</g>')
        if kind is Arrow:
            heads = "".join(f'<polygon points="{_points(arrow_head(item.points))}"/>' for item in items)
            out.append(f'<g fill="{style.edge}" stroke="none">{heads}</g>')
    out.append("</svg>")
    return "".join(out)
