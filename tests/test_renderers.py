"""The drawing layer: one scene model (pictures/scene.py) and its two renderers (render_mpl, render_svg).

Each renderer must draw every primitive of a scene: checked on a scene holding one of each kind, by counting what
matplotlib made (collections by gid, texts by gid) and what the SVG holds (elements by id, parsed as XML).
"""

import xml.etree.ElementTree as ET

import matplotlib
import pytest

matplotlib.use("Agg")
from matplotlib.collections import LineCollection, PolyCollection  # noqa: E402
from matplotlib.text import Text as TextArtist  # noqa: E402

from tutorial_lib.pictures import render_mpl, render_svg  # noqa: E402
from tutorial_lib.pictures.scene import (  # noqa: E402
    MAX_FIGURE_INCHES,
    Arrow,
    Line,
    Polygon,
    Rect,
    Scene,
    Style,
    Text,
    arrow_head,
    escape,
    in_drawing_order,
    text_width,
    visible,
)

SVG = "{http://www.w3.org/2000/svg}"
STYLES = {
    "box": Style(fill="#dbe9f6", edge="#333333", width=0.8, zorder=3),
    "hatched": Style(fill="#a6cee3", edge="#222222", width=2.0, hatch=True),
    "dotted": Style(edge="#555555", width=0.8, dash=(1, 1.65)),
    "arrow": Style(edge="#222222", width=1.2),
    "title": Style(family="mono", weight="bold", zorder=5),
    "note": Style(halo=True, size=7, zorder=5, line_spacing=1.0, color="#b00000"),
}
ITEMS = (
    Rect(10, 10, 50, 20, "box", "rect"),
    Rect(70, 10, 20, 20, "hatched", "hatched"),
    Polygon(((10, 50), (40, 50), (25, 70)), "box", "polygon"),
    Line(((0, 80), (100, 80)), "dotted", "line"),
    Arrow(((10, 90), (90, 90)), "arrow", "arrow"),
    Text(35, 20, 'a<b> & "c"', "title", "escaped", anchor="middle", baseline="middle"),
    Text(80, 40, "two\nlines", "note", "multi", size=5),
    Text(5, 100, "upright", "note", "turned", rotation=90),
)


def scene(**changes) -> Scene:
    fields = dict(width=120.0, height=110.0, items=ITEMS, styles=STYLES, title="one of each <primitive>")
    fields.update(changes)
    return Scene(**fields)


def svg_root(picture: Scene):
    return ET.fromstring(render_svg.svg(picture))


def test_svg_draws_every_item_once_with_its_id():
    root = svg_root(scene())
    ids = [element.get("id") for element in root.iter() if element.get("id") and element.tag != f"{SVG}pattern"]
    assert sorted(ids) == sorted(item.id for item in ITEMS)
    tags = {element.get("id"): element.tag.removeprefix(SVG) for element in root.iter() if element.get("id")}
    assert tags["rect"] == "rect" and tags["polygon"] == "polygon" and tags["line"] == "polyline"
    assert tags["arrow"] == "polyline" and tags["escaped"] == "text"
    assert root.find(f"{SVG}title").text == "one of each <primitive>"


def test_svg_texts_are_escaped_split_into_lines_and_turned():
    root = svg_root(scene())
    texts = {e.get("id"): e for e in root.iter(f"{SVG}text") if e.get("id")}
    assert texts["escaped"].text == 'a<b> & "c"'
    assert [span.text for span in texts["multi"].iter(f"{SVG}tspan")] == ["two", "lines"]
    assert texts["multi"].get("font-size") == "5.00"  # the item's own size beats its style's 7
    assert "rotate(-90" in texts["turned"].get("transform")
    # A halo is a white copy drawn under the text: one per haloed text.
    assert len([e for e in root.iter(f"{SVG}text") if e.get("stroke") == "white"]) == 2


def test_svg_shapes_carry_their_style():
    root = svg_root(scene())
    groups = {g.get("class"): g for g in root.iter(f"{SVG}g") if g.get("class")}
    assert groups["dotted"].get("stroke-dasharray") == "0.80,1.32"  # dashes in line widths, as matplotlib
    assert groups["box"].get("fill") == "#dbe9f6"
    hatch_fills = [g for g in root.iter(f"{SVG}g") if g.get("fill") == "url(#hatch)"]
    assert len(hatch_fills) == 1 and len(list(hatch_fills[0])) == 1
    assert root.find(f"{SVG}defs/{SVG}pattern").get("id") == "hatch"
    heads = [g for g in root.iter(f"{SVG}g") if g.get("fill") == "#222222"]
    assert len(list(heads[0])) == 1  # one head for the one arrow


def test_svg_stacks_styles_by_zorder_then_scene_order():
    root = svg_root(scene())
    order = [g.get("class") for g in root.iter(f"{SVG}g") if g.get("class")]
    assert order == ["hatched", "dotted", "arrow", "box", "title", "note"]
    assert [run[0] for run in in_drawing_order(scene())] == order


def test_mpl_draws_every_primitive():
    fig = render_mpl.render(scene())
    collections = {c.get_gid(): c for c in fig.findobj(lambda a: isinstance(a, (PolyCollection, LineCollection)))}
    assert len(collections["box"].get_paths()) == 2  # the rectangle and the triangle share their style
    assert collections["hatched"].get_hatch() == "///"
    assert isinstance(collections["dotted"], LineCollection) and isinstance(collections["arrow"], LineCollection)
    assert len(collections["arrow-heads"].get_paths()) == 1
    texts = {t.get_gid(): t for t in fig.findobj(TextArtist) if t.get_gid()}
    assert sorted(texts) == ["escaped", "multi", "turned"]
    assert texts["escaped"].get_text() == 'a<b> & "c"'
    assert texts["multi"].get_fontsize() == 5 and texts["turned"].get_rotation() == 90
    assert texts["multi"].get_bbox_patch() is not None  # the halo
    assert tuple(fig.get_size_inches()) == pytest.approx((120 / 72, 110 / 72))


def test_mpl_reuses_a_figure_and_draws_into_an_axes():
    first = render_mpl.render(scene())
    again = render_mpl.render(scene(width=240.0), fig=first)
    assert again is first and len(first.axes) == 1
    assert first.get_size_inches()[0] == pytest.approx(240 / 72)
    from matplotlib.figure import Figure

    ax = Figure(figsize=(4, 4)).add_subplot()
    assert render_mpl.render(scene(), ax=ax) is ax.figure
    assert ax.get_aspect() == 1.0


def test_big_scenes_are_scaled_down_in_both_renderers():
    big = scene(width=10_000.0, height=100.0)
    assert big.scale() == pytest.approx(MAX_FIGURE_INCHES[0] * 72 / 10_000)
    assert render_mpl.render(big).get_size_inches()[0] == pytest.approx(MAX_FIGURE_INCHES[0])
    assert svg_root(big).get("width") == f"{MAX_FIGURE_INCHES[0] * 72:.1f}pt"


def test_renderers_are_deterministic():
    assert render_svg.svg(scene()) == render_svg.svg(scene())


def test_escape_and_visible():
    assert escape('<&">') == "&lt;&amp;&quot;&gt;"
    assert visible("a\x01b\ufffe") == "a\\x01b\\ufffe"
    assert escape("tab\tand\nnewline") == "tab\tand\nnewline"
    ET.fromstring(f"<t>{escape(chr(0) + chr(0xD800))}</t>")  # XML can hold the result


def test_text_width_counts_mono_and_measures_sans():
    assert text_width("abcd") == pytest.approx(4 * 8 * 0.66)
    assert text_width("ab\nabcdef", "mono", 10) == pytest.approx(6 * 10 * 0.66)
    # Proportional glyphs differ: "W" is wider than "i" in DejaVu Sans.
    assert text_width("WWWW", "sans") > 2 * text_width("iiii", "sans")


def test_arrow_head_points_along_the_last_segment():
    tip, left, right = arrow_head(((0, 0), (0, 10), (10, 10)))
    assert tip == (10, 10)
    assert left[0] == pytest.approx(4) and right[0] == pytest.approx(4)
    assert sorted([left[1], right[1]]) == pytest.approx([7.5, 12.5])


def test_renderers_reject_what_is_not_a_scene():
    with pytest.raises(TypeError, match="scene must be a Scene"):
        render_svg.svg("<svg/>")
    with pytest.raises(TypeError, match="scene must be a Scene"):
        render_mpl.render(None)
    with pytest.raises(TypeError, match="fig must be a matplotlib Figure"):
        render_mpl.render(scene(), fig="figure")
    with pytest.raises(TypeError, match="ax must be a matplotlib Axes"):
        render_mpl.render(scene(), ax=1)


def test_side_by_side_places_panels_apart_and_keeps_ids_and_styles_unique():
    from tutorial_lib.pictures.scene import side_by_side

    other = Scene(50.0, 200.0, (Rect(0, 0, 10, 10, "box", "rect"),), {"box": Style(fill="#ff0000")}, "other")
    both = side_by_side([scene(), other], ["left", "right"], gap=10)
    assert both.width == 120 + 10 + 50 and both.height == 16 + 200
    assert both.title == "left: one of each <primitive> | right: other"
    ids = both.ids()
    assert ids["1/rect"].x == 130 and ids["1/rect"].y == 16 and ids["0/rect"].x == 10
    assert ids["0/rect"].style == "box" and ids["1/rect"].style == "1/box"  # same name, another look
    assert both.styles["1/box"].fill == "#ff0000" and both.styles["box"] == STYLES["box"]
    assert [t for t in both.texts() if t[0].endswith("caption")] == [("0/caption", "left"), ("1/caption", "right")]
    ET.fromstring(render_svg.svg(both))
    with pytest.raises(ValueError, match="captions"):
        side_by_side([scene()], ["a", "b"])
    with pytest.raises(TypeError, match="scenes"):
        side_by_side([])
