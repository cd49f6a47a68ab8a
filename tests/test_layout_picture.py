"""layout_picture against ground truth: which cells each drawn row highlights, checked with torch's indexing.

Every check looks at what is drawn: the picture plan (``fig.layout_picture``), the scene drawn from it
(``fig.scene`` / ``layout_scene``: items by id, their texts, styles and positions), the SVG elements by id,
and the summary text; the truth is ``torch.arange(n).as_strided(shape, stride, offset)`` over the same
storage, or per-element data pointers.
"""

import io
import math
import re
import subprocess
import sys
import xml.etree.ElementTree as ET

import matplotlib

matplotlib.use("Agg")

import colours  # noqa: E402
import pytest  # noqa: E402
import torch  # noqa: E402
from geometry import corners, segment_meets_box  # noqa: E402
from ground_truth import truth_map  # noqa: E402
from hypothesis import given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402
from matplotlib.figure import Figure  # noqa: E402

from tutorial_lib import layout, same_storage  # noqa: E402
from tutorial_lib.facts.storage import unravel_index  # noqa: E402
from tutorial_lib.pictures import palette  # noqa: E402
from tutorial_lib.pictures.layout_picture import (  # noqa: E402
    CELL_INSET,
    CELL_PT,
    FIT_ROOM,
    GHOST_CELLS,
    LOOP_POINTS,
    MAX_LISTED,
    MIN_FONT_PT,
    SIDE_BY_SIDE,
    STYLES,
    draw_layout,
    layout_picture,
    layout_scene,
    layout_summary,
    picture_svg,
)
from tutorial_lib.pictures.scene import Arrow, Line, Rect, Scene, Text, text_width  # noqa: E402


def assert_row_matches_torch(fig, name, t, strip=0):
    """The drawn row ``name`` highlights exactly the cells t reads, each naming the element that reads it
    (``[i,j]``, or ``×n`` when n elements do); its element indices are drawn when they fit its cells."""
    picture = fig.layout_picture
    truth = truth_map(t)
    assert picture.read_map(name) == truth
    items = fig.scene.ids()
    for cell in picture.row_cells(name):
        rectangle = items[f"cell:{strip}:{name}:{cell.index}"]
        assert isinstance(rectangle, Rect)
        if cell.index in truth:
            positions = truth[cell.index]
            index = "[" + ",".join(map(str, unravel_index(positions[0], tuple(t.shape)))) + "]"
            expected = index if len(positions) == 1 else f"×{len(positions)}"
            assert cell.text == expected
            drawn = items.get(f"text:{strip}:{name}:{cell.index}")
            assert drawn is None and len(positions) == 1 or drawn.text == expected
            assert rectangle.style.startswith("row") and STYLES[rectangle.style].dash is None
        else:
            assert cell.state == "unread"
            assert rectangle.style == "unread" and STYLES["unread"].dash is not None  # dotted: not colour alone
            assert f"text:{strip}:{name}:{cell.index}" not in items


def texts(fig) -> dict:
    """{id: text} of every text with an id in the figure's scene."""
    return dict(fig.scene.texts())


@pytest.fixture
def matrix():
    return torch.arange(12.0).reshape(3, 4)


def test_matrix_transpose_and_slice_highlight_the_cells_torch_reads(matrix):
    a = matrix
    fig = draw_layout(a, a.t(), a[1:, 1:3], names=["a", "a.t()", "a[1:, 1:3]"])
    assert isinstance(fig, Figure) and isinstance(fig.scene, Scene)
    picture = fig.layout_picture
    assert len(picture.strips) == 1 and picture.strips[0].rows == ("a", "a.t()", "a[1:, 1:3]")
    for name, t in [("a", a), ("a.t()", a.t()), ("a[1:, 1:3]", a[1:, 1:3])]:
        assert_row_matches_torch(fig, name, t)
    # The transpose reads storage index 4 (a[1, 0]) as its row-major position 1 (a.t()[0, 1]).
    assert picture.read_map("a.t()")[4] == (1,)
    assert fig.summary == (
        "storage of 12 float32 (48 bytes); a: shape (3, 4) stride (4, 1) offset 0 reads cells 0–11 (contiguous); "
        "a.t(): shape (4, 3) stride (1, 4) offset 0 reads the same 12 cells as a in a different order; "
        "a[1:, 1:3]: shape (2, 2) stride (4, 1) offset 5 reads 4 of the 6 cells 5–10, each once, "
        "4 of a's 12 cells; each tensor is also drawn as a grid of its shape, each element naming the storage "
        "index it reads"
    )
    assert fig.summary == layout_summary(a, a.t(), a[1:, 1:3], names=["a", "a.t()", "a[1:, 1:3]"])
    assert fig.scene.title == fig.summary


def test_rows_and_labels_are_drawn_once_each(matrix):
    fig = draw_layout(matrix, matrix.t(), names=["a", "a.t()"])
    drawn = texts(fig)
    assert drawn["strip:0"] == "storage of 12 float32 (48 bytes)"
    assert drawn["label:0:a"] == "a: shape (3, 4)  stride (4, 1)  offset 0  ·  float32  ·  contiguous"
    assert drawn["label:0:a.t()"] == "a.t(): shape (4, 3)  stride (1, 4)  offset 0  ·  float32  ·  not contiguous"
    ids = [item.id for item in fig.scene.items if item.id]
    assert len(ids) == len(set(ids))  # every id names one item
    # Labels stand above their row's cells; the rows follow the strip downwards.
    label, first_cell = fig.scene.ids()["label:0:a.t()"], fig.scene.ids()["cell:0:a.t():0"]
    assert label.baseline == "bottom" and label.y < first_cell.y
    assert fig.scene.ids()["cell:0:storage:0"].y < fig.scene.ids()["cell:0:a:0"].y < first_cell.y


def test_storage_cells_show_the_storage_values_and_indices(matrix):
    fig = draw_layout(matrix * 0.5, names=["h"])
    drawn = texts(fig)
    storage = fig.layout_picture.row_cells("storage")
    assert [c.index for c in storage] == list(range(12))
    assert [c.text for c in storage] == [f"{v:g}" for v in (torch.arange(12.0) * 0.5).tolist()]
    for cell in storage:
        assert drawn[f"text:0:storage:{cell.index}"] == cell.text
        assert drawn[f"index:0:storage:{cell.index}"] == str(cell.index)
        assert fig.scene.ids()[f"cell:0:storage:{cell.index}"].style == "storage"
    no_values = draw_layout(matrix, show_values=False)
    assert all(c.text == "" for c in no_values.layout_picture.row_cells("storage"))
    assert not [i for i in no_values.scene.ids() if i.startswith("text:0:storage:")]


def test_long_cell_texts_shrink_to_fit_their_cell():
    values = torch.tensor([12345.0, 1.0, -0.000123, 7.0])
    scene = layout_scene(layout_picture(values, names=["v"]))
    for index in range(4):
        item = scene.ids()[f"text:0:storage:{index}"]
        style = STYLES[item.style]
        size = style.size if item.size is None else item.size
        fits = text_width(item.text, style.family, size, style.weight) <= CELL_PT * FIT_ROOM + 1e-6
        assert fits or size == MIN_FONT_PT  # never smaller than the smallest readable size
    assert MIN_FONT_PT == palette.MIN_TEXT_PT  # no text shrinks below the course's smallest size
    # One size for the whole strip: "1" is drawn as small as "12345", so no value looks more important.
    assert {scene.ids()[f"text:0:storage:{index}"].size for index in range(4)} == {MIN_FONT_PT}
    fits = layout_scene(layout_picture(torch.tensor([1.0, 2.0]), names=["v"]))
    assert {fits.ids()[f"text:0:storage:{index}"].size for index in range(2)} == {None}  # the style's own size


def test_steps_jump_stride_cells_like_torch(matrix):
    t = matrix.t()
    fig = draw_layout(matrix, t, names=["a", "a.t()"])
    steps = {(s.row, s.dim): s for s in fig.layout_picture.steps}
    truth = torch.arange(12).as_strided(t.shape, t.stride(), t.storage_offset())
    assert steps[("a.t()", 0)].to_index == truth[1, 0].item() == 1
    assert steps[("a.t()", 1)].to_index == truth[0, 1].item() == 4
    assert steps[("a", 0)].to_index == 4 and steps[("a", 1)].to_index == 1
    drawn = texts(fig)
    assert drawn["steptext:0:a.t():1"] == "dim 1: stride 4 = jump 4 cells"
    assert drawn["steptext:0:a.t():0"] == "dim 0: stride 1 = jump 1 cell"
    # The arrow runs from the middle of element 0's cell to the middle of the cell one step away.
    items = fig.scene.ids()
    arrow = items["step:0:a.t():1"]
    assert isinstance(arrow, Arrow) and arrow.style == "step"
    (x0, y0), (x1, y1) = arrow.points
    start, end = items["cell:0:a.t():0"], items["cell:0:a.t():4"]
    assert y0 == y1 > start.y + start.h
    assert x0 == pytest.approx(start.x + start.w / 2) and x1 == pytest.approx(end.x + end.w / 2)
    ticks = [item for item in fig.scene.items if isinstance(item, Line) and item.style not in ("ruler", "connector")]
    assert len(ticks) == 2 * len(fig.layout_picture.steps) and {t.style for t in ticks} == {"tick"}


def test_expand_with_stride_zero_marks_repeated_cells_with_counts():
    v = torch.arange(4.0)
    e = v.expand(3, 4)
    fig = draw_layout(v, e, names=["v", "v.expand(3, 4)"])
    assert_row_matches_torch(fig, "v.expand(3, 4)", e)
    cells = fig.layout_picture.row_cells("v.expand(3, 4)", "read")
    assert [(c.index, c.positions, c.text) for c in cells] == [
        (0, (0, 4, 8), "×3"),
        (1, (1, 5, 9), "×3"),
        (2, (2, 6, 10), "×3"),
        (3, (3, 7, 11), "×3"),
    ]
    items = fig.scene.ids()
    repeated = items["cell:0:v.expand(3, 4):0"]
    assert STYLES[repeated.style].hatch and not STYLES[items["cell:0:v:0"].style].hatch  # not colour alone
    assert not [k for k in items if k.startswith("positions:")]  # no list of row-major positions: one meaning each
    assert STYLES[items["text:0:v.expand(3, 4):0"].style].weight == "bold"
    assert "reads the same 4 cells as v, each 3 times (stride 0 repeats them)" in fig.summary
    assert any(s.stride == 0 and s.from_index == s.to_index for s in fig.layout_picture.steps)
    assert "dim 0: stride 0 = stays on the same cell" in texts(fig).values()
    loop = items["step:0:v.expand(3, 4):0"]
    assert isinstance(loop, Arrow) and loop.style == "loop" and len(loop.points) == LOOP_POINTS


def test_uint8_view_is_drawn_per_byte_and_lines_up_with_the_float_cells(matrix):
    b = matrix.view(torch.uint8)
    fig = draw_layout(matrix, b, matrix[1], names=["a", "bytes", "a[1]"])
    strip = fig.layout_picture.strips[0]
    assert strip.unit_bytes == 1 and strip.itemsize == 4
    assert fig.layout_picture.read_map("bytes") == truth_map(b)
    assert_row_matches_torch(fig, "a[1]", matrix[1])
    assert_row_matches_torch(fig, "bytes", b)  # the byte row names elements, never values
    # The bytes' values are in a second, narrower strip under the ruler: values only ever sit in a storage strip.
    raw = matrix.view(torch.uint8).reshape(-1).tolist()
    drawn, items = texts(fig), fig.scene.ids()
    assert [drawn[f"text:0:storage as uint8:{k}"] for k in range(48)] == [str(v) for v in raw]
    assert {items[f"cell:0:storage as uint8:{k}"].style for k in range(48)} == {"storage"}
    narrow, float_cell = items["cell:0:storage as uint8:0"], items["cell:0:storage:0"]
    assert narrow.h < float_cell.h and narrow.w == pytest.approx(float_cell.w / 4)
    assert float_cell.y < items["ruler:0:0"].y < narrow.y < items["cell:0:bytes:0"].y
    assert drawn["gutter:0:as uint8"] == "as uint8"
    assert not [t for k, t in drawn.items() if k.startswith("text:0:bytes:") and not t.startswith("[")]
    inset = CELL_INSET * CELL_PT
    for k in range(12):
        float_cell = items[f"cell:0:storage:{k}"]
        byte_cell = items[f"cell:0:bytes:{4 * k}"]
        # Byte 4k starts where float cell k starts (the row cells are inset by a hair for the border).
        assert byte_cell.x == pytest.approx(float_cell.x + inset)
        assert float_cell.w == pytest.approx(4 * (byte_cell.w + 2 * inset))
    assert "as uint8 (1 byte each) reads the same 48 bytes as a" in fig.summary
    assert "dim 0: stride 16 = jump 16 bytes" in texts(fig).values()


def test_byte_ranges_of_rows_agree_with_data_pointers(matrix):
    """Every drawn read cell covers exactly the bytes torch says that element occupies."""
    b = matrix[:, 1:3].view(torch.int16)
    fig = draw_layout(matrix, b, names=["a", "halves"])
    base = matrix.untyped_storage().data_ptr()
    for cell in fig.layout_picture.row_cells("halves", "read"):
        for position in cell.positions:
            index = divmod(position, b.shape[1])
            assert b[index].data_ptr() - base == cell.byte_start
            assert b.element_size() == cell.nbytes


def test_tensors_with_other_storages_get_separate_strips(matrix):
    c = matrix.clone()
    fig = draw_layout(matrix, c, matrix[2], names=["a", "a.clone()", "a[2]"])
    picture = fig.layout_picture
    assert [s.rows for s in picture.strips] == [("a", "a[2]"), ("a.clone()",)]
    assert "storage of 12 float32 (48 bytes), separate from a's (not shared); a.clone()" in fig.summary
    assert_row_matches_torch(fig, "a.clone()", c, strip=1)
    items = fig.scene.ids()
    first, second = items["cell:0:storage:11"], items["cell:1:storage:0"]
    assert second.y == pytest.approx(first.y) and second.x > first.x + first.w  # small: side by side, one line
    # Rows take the colours in the picture's row order, one style per colour.
    assert [row.name for row in picture.rows] == ["a", "a[2]", "a.clone()"]
    assert [items[f"cell:{s}:{n}:0"].style for s, n in [(0, "a"), (1, "a.clone()")]] == ["row0", "row2"]


def test_rows_of_one_storage_that_do_not_overlap_say_so(matrix):
    fig = draw_layout(matrix[0], matrix[2], names=["row 0", "row 2"])
    assert "shares no cell with row 0 (same storage, no overlap)" in fig.summary
    assert set(fig.layout_picture.read_map("row 0")).isdisjoint(fig.layout_picture.read_map("row 2"))


@st.composite
def strided_views(draw):
    """as_strided over a small storage: shape (0-3 dims, sizes 0-4), strides 0-5, offset 0-4."""
    ndim = draw(st.integers(0, 3))
    shape = tuple(draw(st.lists(st.integers(0, 4), min_size=ndim, max_size=ndim)))
    stride = tuple(draw(st.lists(st.integers(0, 5), min_size=ndim, max_size=ndim)))
    offset = draw(st.integers(0, 4))
    reach = offset + sum((size - 1) * step for size, step in zip(shape, stride) if size > 0)
    numel = reach + 1 + draw(st.integers(0, 3))
    dtype = draw(st.sampled_from([torch.float32, torch.int64, torch.uint8, torch.float16]))
    return torch.arange(numel).to(dtype).as_strided(shape, stride, offset)


@given(strided_views())
def test_any_strided_view_highlights_exactly_what_torch_reads(t):
    base = torch.empty(0, dtype=t.dtype).set_(t.untyped_storage())
    picture = layout_picture(base, t, names=["storage view", "t"])
    assert picture.read_map("t") == truth_map(t)
    drawn = {c.index for c in picture.row_cells("t")}
    assert drawn == set(range(t.untyped_storage().nbytes() // t.element_size()))  # small: every cell drawn
    assert all(c.count_exact for c in picture.row_cells("t"))
    scene = layout_scene(picture)
    assert {f"cell:0:t:{index}" for index in drawn} <= set(scene.ids())
    assert all(0 <= item.x <= scene.width and 0 <= item.y <= scene.height for item in scene.items if hasattr(item, "x"))


def test_a_hundred_million_elements_draw_only_windows_with_gap_markers():
    x = torch.empty(10**8)  # values are never read past the drawn cells
    middle = x[5 * 10**7 : 5 * 10**7 + 10]
    fig = draw_layout(x, middle, x[::1000], names=["x", "middle", "every 1000th"])
    picture = fig.layout_picture
    strip = picture.strips[0]
    storage = picture.row_cells("storage")
    assert len(storage) <= 64
    assert len(storage) + strip.hidden_cells() == 10**8
    gap_texts = [text for ident, text in texts(fig).items() if ident.startswith("gaptext")]
    assert gap_texts and all(t.startswith("… ") and t.endswith("cells\nnot shown …") for t in gap_texts)
    hidden = sum(int(t.split()[1].replace(",", "")) for t in gap_texts)
    assert hidden == strip.hidden_cells()
    gaps = [item for ident, item in fig.scene.ids().items() if ident.startswith("gap:")]
    assert len(gaps) == len(gap_texts) and {g.style for g in gaps} == {"gap"}
    # Each gap shows "…" in every row under it.
    assert [t for i, t in fig.scene.texts() if not i] == ["…"] * len(gaps) * len(strip.rows)
    # The slice is listed completely: its cells and positions are exact.
    assert picture.read_map("middle") == {5 * 10**7 + k: (k,) for k in range(10)}
    # x itself is too long to list: its first and last elements are exact, the middle window is "?".
    base = x.untyped_storage().data_ptr()
    for cell in picture.row_cells("x", "read"):
        (position,) = cell.positions
        assert x[position].data_ptr() - base == cell.byte_start
    unknown = picture.row_cells("x", "unknown")
    assert unknown and all(c.text == "?" for c in unknown)
    assert all(MAX_LISTED <= c.index < 10**8 - 1024 for c in unknown)
    assert {fig.scene.ids()[f"cell:0:x:{c.index}"].style for c in unknown} == {"unknown"}
    assert "cells marked ? were not checked" in fig.summary
    assert "cells 0–4 and 49,999,999–50,000,010 and 99,999,995–99,999,999 shown" in fig.summary
    step = next(s for s in picture.steps if s.row == "every 1000th")
    assert not step.shown
    assert texts(fig)["steptext:0:every 1000th:0"] == "dim 0: stride 1000 = jump 1,000 cells (target not shown)"
    assert fig.scene.ids()["step:0:every 1000th:0"].style == "step-not-shown"
    # Long storage indices are turned upright.
    assert fig.scene.ids()["index:0:storage:99999999"].rotation == 90


def test_transpose_of_a_big_matrix_never_guesses():
    """Too long to list: every drawn cell is either exactly right or marked '?', never wrongly 'unread'."""
    big = torch.empty(3000, 3000).t()  # reads every storage cell, in transposed order
    picture = layout_picture(big, names=["big.t()"], show_values=False)
    base = big.untyped_storage().data_ptr()
    cells = picture.row_cells("big.t()")
    assert not [c for c in cells if c.state == "unread"]
    read = [c for c in cells if c.state == "read"]
    assert read and picture.row_cells("big.t()", "unknown")
    for cell in read:
        for position in cell.positions:
            assert big[divmod(position, 3000)].data_ptr() - base == cell.byte_start


def test_zero_dim_and_empty_tensors():
    scalar = torch.arange(5.0)[3]
    fig = draw_layout(scalar, names=["s"])
    assert fig.layout_picture.read_map("s") == {3: (0,)}
    assert "s: shape () stride () offset 3 reads cell 3 (contiguous)" in fig.summary
    assert not [i for i in fig.scene.ids() if i.startswith("step")]  # no dimension to step along
    empty = torch.arange(5.0)[2:2]
    fig = draw_layout(empty, names=["e"])
    assert fig.layout_picture.row_cells("e", "read") == ()
    assert "reads nothing (no elements)" in fig.summary


def test_layouts_can_be_drawn_without_values(matrix):
    fig = draw_layout(layout(matrix), layout(matrix.t()), names=["a", "a.t()"], show_values=False)
    assert len(fig.layout_picture.strips) == 1
    assert fig.layout_picture.read_map("a.t()") == truth_map(matrix.t())
    assert "Layouts drawn on one strip because their storage sizes match" in fig.summary
    with pytest.raises(ValueError, match="show_values"):
        draw_layout(layout(matrix))


def test_a_notebook_shows_the_summary_as_the_figures_text_so_no_cell_need_print_it(matrix):
    from IPython.core.formatters import PlainTextFormatter

    fig = draw_layout(matrix, matrix.t(), names=["x", "x.t()"])
    assert PlainTextFormatter()(fig) == fig.summary  # not "<Figure size 586x640 with 1 Axes>"
    assert isinstance(fig, Figure) and fig._repr_png_()[1]["width"] > 0  # still a Figure, still a PNG


def test_drawing_into_a_given_axes_returns_its_figure(matrix):
    fig = Figure()
    ax = fig.add_subplot()
    assert draw_layout(matrix, ax=ax) is fig
    assert fig.summary.startswith("storage of 12 float32")
    assert "cell:0:t0:0" in fig.scene.ids()
    assert {t.get_gid() for t in ax.texts} >= {"strip:0", "text:0:t0:0", "gutter:0:storage"}


def test_figures_are_bare_sized_to_the_scene_and_display_as_png(matrix):
    import matplotlib.pyplot as plt

    before = plt.get_fignums()
    fig = draw_layout(matrix)
    assert plt.get_fignums() == before  # nothing registered with pyplot: no too-many-figures warning
    assert tuple(fig.get_size_inches() * 72) == pytest.approx((fig.scene.width, fig.scene.height))
    assert fig._repr_png_()[0].startswith(b"\x89PNG")
    # matplotlib drew every text of the scene, under its id.
    drawn = {t.get_gid(): t.get_text() for t in fig.axes[0].texts if t.get_gid()}
    assert drawn == {ident: text for ident, text in fig.scene.texts() if ident}


def test_svg_has_the_same_cells_and_the_summary_as_title(matrix):
    picture = layout_picture(matrix, matrix.t(), names=["a", "a.t()"])
    root = ET.fromstring(picture_svg(picture))
    ns = {"svg": "http://www.w3.org/2000/svg"}
    assert root.find("svg:title", ns).text == picture.summary
    ids = {element.get("id"): element for element in root.iter() if element.get("id")}
    for cell in picture.cells:
        assert f"cell:{cell.strip}:{cell.row}:{cell.index}" in ids
        if cell.text:
            assert ids[f"text:{cell.strip}:{cell.row}:{cell.index}"].text == cell.text
    assert set(layout_scene(picture).ids()) <= set(ids)
    assert picture_svg(picture) == picture_svg(picture)  # deterministic: explorers compare redraws


def test_scene_texts_are_the_pictures_texts(matrix):
    picture = layout_picture(matrix[::2], names=["a[::2]"])
    scene = layout_scene(picture)
    assert isinstance(scene, Scene) and scene.styles is STYLES
    drawn = dict(scene.texts())
    for cell in picture.cells:
        if cell.text:
            assert drawn[f"text:{cell.strip}:{cell.row}:{cell.index}"] == cell.text
    for row in picture.rows:
        assert drawn[f"label:{row.strip}:{row.name}"] == row.label
    assert all(item.style in STYLES for item in scene.items)
    assert all(isinstance(item, (Rect, Text, Line, Arrow)) for item in scene.items)


@pytest.mark.parametrize(
    "call, error, words",
    [
        (lambda a: draw_layout(), ValueError, "tensors is empty"),
        (lambda a: draw_layout([1, 2]), TypeError, r"tensors\[0\]"),
        (lambda a: draw_layout(a, a.to_sparse()), ValueError, r"tensors\[1\]"),
        (lambda a: draw_layout(a, names="a"), TypeError, "names"),
        (lambda a: draw_layout(a, names=["a", "b"]), ValueError, "names"),
        (lambda a: draw_layout(a, a, names=["a", "a"]), ValueError, "names must be distinct"),
        (lambda a: draw_layout(a, names=[3]), TypeError, r"names\[0\]"),
        (lambda a: draw_layout(a, names=["storage"]), ValueError, r"names\[0\]"),
        (lambda a: draw_layout(a, max_cells=3), ValueError, "max_cells"),
        (lambda a: draw_layout(a, max_cells="64"), TypeError, "max_cells"),
        (lambda a: draw_layout(a, show_values="yes"), TypeError, "show_values"),
        (lambda a: draw_layout(a, ax="axes"), TypeError, "ax must be"),
        (lambda a: picture_svg(a), TypeError, "picture"),
        (lambda a: layout_scene(a), TypeError, "picture must be a LayoutPicture"),
    ],
)
def test_bad_arguments_are_named(matrix, call, error, words):
    with pytest.raises(error, match=words):
        call(matrix)


def test_importing_the_module_imports_no_matplotlib_and_changes_nothing():
    code = (
        "import sys, tutorial_lib.pictures.layout_picture, tutorial_lib.explorers.layout_explorers\n"
        "print('matplotlib' in sys.modules, 'ipywidgets' in sys.modules)"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.split() == ["False", "False"]


# ------------------------------------------------------------------------------------ grids (issue 14)


def grid_of(picture, name):
    return next(grid for grid in picture.grids if grid.row == name)


def test_each_tensor_is_a_grid_whose_elements_name_the_storage_index_torch_reads(matrix):
    t = matrix.t()
    fig = draw_layout(matrix, t, names=["a", "a.t()"])
    items, grid = fig.scene.ids(), grid_of(fig.layout_picture, "a.t()")
    assert [(e.index, e.storage_index) for e in grid.elements][:4] == [
        ((0, 0), 0),
        ((0, 1), 4),
        ((0, 2), 8),
        ((1, 0), 1),
    ]
    base = t.untyped_storage().data_ptr()
    for element in grid.elements:
        i, j = element.index
        assert (
            element.storage_index
            == (t[i, j].data_ptr() - base) // 4
            == t.storage_offset() + i * t.stride(0) + j * t.stride(1)
        )
        assert element.position == i * 3 + j
        box, text = items[f"elem:a.t():{element.position}"], items[f"elemtext:a.t():{element.position}"]
        # Coloured like the tensor's cells, the storage index written in it.
        assert box.style == items[f"cell:0:a.t():{element.storage_index}"].style == "row1"
        assert text.text == str(element.storage_index)
        assert box.y + box.h < items["cell:0:storage:0"].y  # the grid is above the storage strip
    drawn = texts(fig)
    assert drawn["gridtitle:a.t()"] == "a.t(): 4×3 grid (i down, j across)"
    assert [drawn[f"colhead:a.t():0:{c}"] for c in range(3)] == ["0", "1", "2"]
    assert [drawn[f"rowhead:a.t():0:{r}"] for r in range(4)] == ["0", "1", "2", "3"]
    assert "each element naming the storage index it reads" in fig.summary


@given(strided_views())
def test_any_grid_element_names_the_storage_index_torch_gives(t):
    picture = layout_picture(t, names=["t"])
    grid = grid_of(picture, "t")
    scene = layout_scene(picture)
    truth = torch.arange(t.untyped_storage().nbytes() // t.element_size()).as_strided(
        t.shape, t.stride(), t.storage_offset()
    )
    drawn = t.dim() >= 2  # a 1-D or 0-d tensor's grid would repeat its row: not drawn
    assert ("gridtitle:t" in scene.ids()) == drawn
    if t.numel() == 0:
        assert grid.elements == () and (not drawn or "no elements" in dict(scene.texts())["gridtitle:t"])
        return
    for element in grid.elements:
        assert element.storage_index == truth[element.index].item()
        assert element.storage_index == t.storage_offset() + sum(i * s for i, s in zip(element.index, t.stride()))
        assert truth.reshape(-1)[element.position].item() == element.storage_index
        if drawn:
            assert scene.ids()[f"elemtext:t:{element.position}"].text == f"{element.storage_index:,}"
    assert len({e.position for e in grid.elements}) == len(grid.elements)
    assert len(grid.elements) == t.numel()  # small: nothing cut


def test_more_dims_are_nested_blocks_labelled_by_their_leading_indices():
    x = torch.arange(16.0).reshape(4, 4)
    u = x.unfold(0, 2, 1).unfold(1, 2, 1)
    fig = draw_layout(x, u, names=["x", "u"])
    grid = grid_of(fig.layout_picture, "u")
    assert [(b.lead, b.line, b.place) for b in grid.blocks] == [((i, j), i, j) for i in range(3) for j in range(3)]
    drawn = texts(fig)
    # Above 2-D, "i down, j across" would not say which dims: the title names them.
    assert drawn["gridtitle:u"] == "u: 3×3×2×2 grid (blocks by dims 0, 1; dim 2 down, dim 3 across)"
    assert drawn["blocklabel:u:4"] == "[1, 1, :, :]"
    assert len(grid.elements) == 36 and grid.cut == ""
    assert grid.element(1, 2, 1, 0).storage_index == u[1, 2, 1, 0].item() == 10


def test_zero_dim_empty_and_big_grids():
    scalar = torch.arange(5.0)[3]
    picture = layout_picture(scalar, names=["s"])
    (element,) = grid_of(picture, "s").elements
    assert element.index == () and element.storage_index == 3
    scene = layout_scene(picture)
    assert "gridtitle:s" not in scene.ids() and not [k for k in scene.ids() if k.startswith("colhead:")]  # no "0"
    assert dict(scene.texts())["text:0:s:3"] == "[]"
    empty = layout_picture(torch.zeros(0, 4), names=["e"])
    assert dict(layout_scene(empty).texts())["gridtitle:e"] == "e: no elements (shape (0, 4))"
    big = torch.zeros(100, 30)
    picture = layout_picture(big, names=["big"])
    grid = grid_of(picture, "big")
    assert grid.blocks[0].rows == (0, 1, 2, 3, None, 99) and grid.blocks[0].columns == (0, 1, 2, 3, 4, 5, None, 29)
    assert grid.element(99, 29).storage_index == 2999 and grid.element(50, 3) is None
    assert "(big's grid shows 5 of 100 rows, 7 of 30 columns)" in picture.summary
    drawn = dict(layout_scene(picture).texts())
    assert drawn["rowhead:big:0:4"] == "⋮" and drawn["colhead:big:0:6"] == "…"
    cube = layout_picture(torch.zeros(9, 2, 2), names=["c"])
    assert "c's grid shows 3 of 9 blocks" in cube.summary


def test_short_labels_stand_in_place_and_no_sentence_legend_is_drawn(matrix):
    fig = draw_layout(matrix, matrix.t(), names=["a", "a.t()"])
    items, notes = fig.scene.ids(), fig.layout_picture.notes
    assert "legend" not in items  # the long legend stays data, for help texts
    assert "tensor rows: under each storage cell, the index [i,j] of the element that reads it" in notes
    strip, index, ruler = items["cell:0:storage:0"], items["index:0:storage:0"], items["ruler:0:0"]
    labels = {word: items[f"gutter:0:{word}"] for word in ("index", "storage", "bytes")}
    for label in labels.values():  # left of the strip, right-aligned against it
        assert label.anchor == "end" and label.x <= strip.x and label.baseline == "middle"
    assert labels["storage"].y == pytest.approx(strip.y + strip.h / 2)
    assert labels["index"].y < strip.y and abs(labels["index"].y - index.y) < strip.h / 2
    assert labels["bytes"].y > strip.y + strip.h and abs(labels["bytes"].y - ruler.y) < strip.h / 2
    # The storage's title is at the strip it names: under the ruler, above the first row's label.
    title = items["strip:0"]
    assert ruler.y < title.y < items["label:0:a"].y
    sizes = [item.size or STYLES[item.style].size for item in fig.scene.items if isinstance(item, Text)]
    assert min(sizes) >= palette.MIN_TEXT_PT  # nothing below the course's smallest text


def test_each_number_has_one_meaning_grid_storage_index_row_element_index_strip_value(matrix):
    """Grid numbers are storage indices, row cells name elements ([i,j]), values sit in the storage strip only."""
    t = matrix.t()
    fig = draw_layout(matrix, t, names=["x", "y = x.t()"])
    drawn = texts(fig)
    # The transpose's element [0, 1] reads storage index 4: its grid says 4, the row cell under index 4 says [0,1].
    assert drawn["elemtext:y = x.t():1"] == "4" and (t[0, 1].data_ptr() - matrix.data_ptr()) // 4 == 4
    assert drawn["text:0:y = x.t():4"] == "[0,1]"
    assert drawn["text:0:y = x.t():1"] == "[1,0]"  # not "3", the row-major position the old row wrote
    row_texts = [text for ident, text in drawn.items() if ident.startswith("text:0:y = x.t():")]
    assert all(re.fullmatch(r"\[\d+,\d+\]", text) for text in row_texts)
    values = [text for ident, text in drawn.items() if ident.startswith("text:0:storage:")]
    assert values == [f"{v:g}" for v in matrix.reshape(-1).tolist()]
    # One size per row: every element index of a row is drawn alike.
    assert len({fig.scene.ids()[f"text:0:y = x.t():{k}"].size for k in range(12)}) == 1


def test_one_row_grids_are_joined_to_the_storage_index_each_element_reads():
    row = torch.arange(6.0).view(1, 6)
    every_other = row[:, ::2]
    fig = draw_layout(row, every_other, names=["x", "y"])
    items = fig.scene.ids()
    elements = [item for ident, item in items.items() if ident.startswith("elem:")]
    for name, tensor in [("x", row), ("y", every_other)]:
        for position in range(tensor.numel()):
            line, element = items[f"connector:{name}:{position}"], items[f"elem:{name}:{position}"]
            assert isinstance(line, Line) and line.style == "connector"
            (x0, y0), (x1, y1) = line.points
            # It starts at its own element's bottom middle: never beside its grid, never in mid-air.
            assert y0 == pytest.approx(element.y + element.h) and x0 == pytest.approx(element.x + element.w / 2)
            index = int(torch.arange(6).as_strided(tensor.shape, tensor.stride(), 0).reshape(-1)[position])
            cell = items[f"cell:0:storage:{index}"]
            assert x1 == pytest.approx(cell.x + cell.w / 2) and y1 < items[f"index:0:storage:{index}"].y
            behind = [e for e in elements if segment_meets_box(line.points, *corners(e), edges=False)]
            assert not behind  # never behind a cell


def test_connectors_only_when_every_grid_on_the_line_has_at_most_six_elements(matrix):
    # x.t() of a 3x4 matrix: 24 lines were a fan no line of which could be followed; the numbers say it already.
    fig = draw_layout(matrix, matrix.t(), names=["x", "y = x.t()"])
    assert not [k for k in fig.scene.ids() if k.startswith("connector:")]
    assert fig.scene.ids()["elemtext:y = x.t():1"].text == "4"  # the grid still names the storage index
    # A 6-element grid beside a 7-element one: none either (a line to one would cross the other's cells).
    base = torch.arange(13.0)
    mixed = draw_layout(base, base[:6].view(2, 3), base[6:].view(1, 7), names=["b", "p", "q"])
    assert not [k for k in mixed.scene.ids() if k.startswith("connector:")]
    # Review 22: a 2x3 grid's lines from its top row started beside the grid, in mid-air: only one-row grids.
    two_rows = draw_layout(base, base[:6].view(2, 3), names=["b", "p"])
    assert not [k for k in two_rows.scene.ids() if k.startswith("connector:")]
    alone = draw_layout(base, base[:6].view(1, 6), names=["b", "p"])
    assert len([k for k in alone.scene.ids() if k.startswith("connector:")]) == 6


def test_one_dimensional_tensors_have_no_grid_their_row_names_each_element():
    x = torch.arange(5.0)
    fig = draw_layout(x, x[1:], names=["x", "x[1:]"])
    items, drawn = fig.scene.ids(), texts(fig)
    assert not [k for k in items if k.startswith(("gridtitle:", "elem:", "colhead:", "rowhead:"))]
    assert [drawn[f"text:0:x[1:]:{k}"] for k in range(1, 5)] == ["[0]", "[1]", "[2]", "[3]"]
    assert "each tensor is also drawn as a grid" not in fig.summary
    mixed = draw_layout(torch.arange(6.0).view(2, 3), names=["m"]).summary
    assert "each tensor is also drawn as a grid" in mixed


def test_separate_storages_sit_side_by_side_when_they_fit_and_one_under_another_when_not():
    x = torch.arange(4.0)
    fig = draw_layout(x, x.clone(), names=["x", "c"])
    items = fig.scene.ids()
    first, second = items["cell:0:storage:0"], items["cell:1:storage:0"]
    assert second.y == pytest.approx(first.y) and second.x > items["cell:0:storage:3"].x + first.w
    assert fig.scene.width <= SIDE_BY_SIDE * CELL_PT + 2 * CELL_PT
    wide = torch.arange(24.0)
    fig = draw_layout(wide, wide.clone(), names=["w", "c"])
    items = fig.scene.ids()
    assert items["cell:1:storage:0"].y > items["label:0:w"].y  # too wide together: one under the other
    assert items["strip:1"].text == "storage 2: 24 float32 (96 bytes) · not shared with storage 1"  # one line
    assert "separate from w's (not shared)" in fig.summary


def saved_and_loaded(obj):
    """What torch.load returns for ``obj`` saved with torch.save (chapter 7 and the torch_save deep dive)."""
    buffer = io.BytesIO()
    torch.save(obj, buffer)
    buffer.seek(0)
    return torch.load(buffer)


def right_edge(scene, strip: int) -> float:
    """The rightmost point of every box and text that belongs to storage ``strip`` (its ids name it)."""
    edges = []
    for item in scene.items:
        parts = item.id.split(":")
        if len(parts) < 2 or parts[1] != str(strip):
            continue
        if isinstance(item, Rect):
            edges.append(item.x + item.w)
        elif isinstance(item, Text) and item.anchor == "start":
            style = scene.styles[item.style]
            edges.append(item.x + text_width(item.text, style.family, item.size or style.size, style.weight))
    return max(edges)


SMALL_SEPARATE_STORAGES = {  # the pictures of chapter 7 c24, the torch_save deep dive c12 and chapter 2 c5
    "07": lambda base: [
        saved_and_loaded({"base": base, "window": base[2:5]})["base"],
        saved_and_loaded({"base": base, "window": base[2:5]})["window"],
        saved_and_loaded(base[2:5].clone()),
    ],
    "torch_save": lambda base: [
        *saved_and_loaded({"base": base, "window": base[2:5]}).values(),
        saved_and_loaded(base),
        saved_and_loaded(base[2:5]),
    ],
    "02": lambda base: [base.view(2, 3), base.view(2, 3)[1:], base.view(2, 3)[1:].clone()],
}


@pytest.mark.parametrize("case", list(SMALL_SEPARATE_STORAGES))
def test_small_separate_storages_stand_side_by_side_under_short_headings(case):
    tensors = SMALL_SEPARATE_STORAGES[case](torch.arange(10.0, 16.0))
    names = [f"tensor {k}, saved" for k in range(len(tensors))]  # long names, as the notebooks give
    fig = draw_layout(*tensors, names=names)
    scene, strips = fig.scene, fig.layout_picture.strips
    items = scene.ids()
    assert len(strips) >= 2
    for k in range(1, len(strips)):
        before, cell = items[f"cell:{k - 1}:storage:0"], items[f"cell:{k}:storage:0"]
        assert cell.y == pytest.approx(before.y)  # the storages stand on one line, left to right
        assert right_edge(scene, k - 1) < cell.x and right_edge(scene, k - 1) < items[f"strip:{k}"].x  # apart
        heading = items[f"strip:{k}"].text
        size = f"{strips[k].pieces[-1][2] // 4} float32 ({strips[k].pieces[-1][2]} bytes)"
        earlier = "storage 1" if k == 1 else "storage 1 or 2"  # each earlier storage, not only the first
        assert heading == f"storage {k + 1}: {size}\nnot shared with {earlier}"  # short, one meaning a line
        assert f'separate from the storage of "{names[0]}" (not shared)' in fig.summary  # the full sentence
    first_bytes = strips[0].pieces[-1][2]
    assert items["strip:0"].text == f"storage 1: {first_bytes // 4} float32 ({first_bytes} bytes)"
    assert scene.width * 100 / 72 <= 1_040  # the notebook's column, at 100 dpi


def test_rows_above_two_dims_name_every_cell_without_brackets_when_those_do_not_fit():
    cube = torch.arange(24.0).view(2, 3, 4)
    turned = cube.permute(2, 0, 1)  # the contiguous deep dive's c19
    fig = draw_layout(turned, names=["turned"])
    items = fig.scene.ids()
    for cell in fig.layout_picture.row_cells("turned"):
        drawn = items.get(f"text:0:turned:{cell.index}")
        assert drawn is not None and drawn.text, cell  # every cell of the row says which element reads it
        index = unravel_index(cell.positions[0], tuple(turned.shape))
        assert drawn.text == ",".join(map(str, index))  # [3,0,1] does not fit a cell at 7 pt: 3,0,1 does
        assert turned[index].item() == cube.reshape(-1)[cell.index].item()  # the element reading that cell
        style = STYLES[drawn.style]
        size = drawn.size or style.size
        assert size >= MIN_FONT_PT
        assert text_width(drawn.text, style.family, size, style.weight) <= items[f"cell:0:turned:{cell.index}"].w
    flat = draw_layout(torch.arange(24.0).view(4, 6).t(), names=["m"])  # 2-D rows keep their brackets
    assert {t for k, t in texts(flat).items() if k.startswith("text:0:m:")} <= {
        f"[{i},{j}]" for i in range(6) for j in range(4)
    }


def test_big_storages_keep_one_number_format_and_size_per_row_and_nothing_overflows():
    x = torch.randn(1_000_000)
    views = [x, x[999_990:], x[::100_000]]
    fig = draw_layout(*views, names=["x", "tail", "every"])
    items = fig.scene.ids()
    for row in ["storage", "x", "tail", "every"]:
        drawn = [
            item for key, item in items.items() if key.startswith(f"text:0:{row}:") and not item.text.startswith("×")
        ]
        assert len({item.size for item in drawn}) <= 1  # one size for the row's numbers
        for item in drawn:
            cell = items[item.id.replace("text:", "cell:", 1)]
            style = STYLES[item.style]
            size = style.size if item.size is None else item.size
            assert size >= MIN_FONT_PT
            if row != "storage":  # an element index never runs into the next cell: it fits, or is left out
                assert text_width(item.text, style.family, size, style.weight) <= cell.w + 1e-6
    indices = [t for k, t in texts(fig).items() if k.startswith(("index:", "elemtext:", "ruler:"))]
    assert all(re.fullmatch(r"\d{1,3}(,\d{3})*", t) for t in indices)  # one format: thousands separated


def test_honest_labels_for_channels_last_and_for_storages_named_with_commas():
    nchw = torch.arange(24.0).view(1, 2, 3, 4)
    last = nchw.contiguous(memory_format=torch.channels_last)
    drawn = texts(draw_layout(last, names=["cl"]))
    assert "not contiguous (row-major); contiguous as channels_last" in drawn["label:0:cl"]
    base = torch.arange(4.0)
    fig = draw_layout(base, base.clone(), names=["base, saved together", "base, saved alone"])
    assert 'separate from the storage of "base, saved together" (not shared)' in fig.summary


def test_rows_take_the_palettes_tensor_colours_twelve_before_repeating():
    base = torch.arange(13.0)
    rows = [base[k : k + 1] for k in range(13)]
    picture = layout_picture(*rows, names=[f"r{k}" for k in range(13)])
    scene = layout_scene(picture)
    fills = [STYLES[scene.ids()[f"cell:0:r{k}:{k}"].style].fill for k in range(13)]
    assert fills[:12] == [palette.tensor_colour(k) for k in range(12)] and len(set(fills[:12])) == 12
    assert fills[12] == fills[0]
    assert STYLES["storage"].fill == palette.STORAGE and STYLES["ghost"].edge == palette.STALE


def test_every_views_first_cells_are_drawn_on_a_big_storage():
    x = torch.arange(10_000.0)
    views = {"x": x, "x[2000:2100]": x[2000:2100], "x[5000:5050]": x[5000:5050], "x[7000::3]": x[7000::3]}
    picture = layout_picture(*views.values(), names=list(views))
    for name, view in views.items():
        first = view.storage_offset()
        cell = next(c for c in picture.row_cells(name) if c.index == first)
        assert cell.state == "read" and cell.positions[0] == 0  # never in the "not shown" gap
    assert len(picture.row_cells("storage")) <= 64


def test_a_big_storage_with_three_views_stays_narrow_and_keeps_what_matters():
    x = torch.arange(10_000.0)
    views = {"x": x, "x[5000:5010]": x[5000:5010], "x[::1000]": x[::1000]}
    fig = draw_layout(*views.values(), names=list(views))
    picture, scene = fig.layout_picture, fig.scene
    assert scene.width <= 14 * 72  # at most 1,400 px at 100 dpi (it was about 2,000)
    assert fig.get_size_inches()[0] * 100 <= 1400
    # Each view's first cells, both ends of the storage, and each gap with its count of hidden cells.
    for name, view in views.items():
        first = view.storage_offset()
        assert [c.state for c in picture.row_cells(name) if first <= c.index < first + 3][:1] == ["read"]
    assert {0, 9_999} <= {c.index for c in picture.row_cells("storage")}
    gap_texts = [text for ident, text in texts(fig).items() if ident.startswith("gaptext")]
    assert len(gap_texts) == 2
    assert sum(int(t.split()[1].replace(",", "")) for t in gap_texts) == picture.strips[0].hidden_cells()
    assert len(picture.row_cells("storage")) + picture.strips[0].hidden_cells() == 10_000
    # Grids too wide for one line: the last starts a line of its own, under the first.
    grid = torch.arange(10_000.0).view(100, 100)
    blocks = {f"g[{k}::5]": grid[k::5] for k in range(5)}
    items = draw_layout(*blocks.values(), names=list(blocks)).scene.ids()
    first = items["gridtitle:g[0::5]"]
    later = [items[f"gridtitle:{name}"] for name in blocks if items[f"gridtitle:{name}"].y > items["elem:g[0::5]:0"].y]
    assert later and min(title.x for title in later) == first.x
    assert max(item.y for k, item in items.items() if k.startswith("elem:")) < items["cell:0:storage:0"].y
    # A bigger max_cells still draws more of the storage.
    wider = layout_picture(*views.values(), names=list(views), max_cells=256)
    assert len(wider.row_cells("storage")) > len(picture.row_cells("storage"))


def test_a_byte_ruler_under_the_strip_widens_with_the_dtype():
    for dtype, step in [(torch.float32, 4), (torch.float64, 8), (torch.int16, 2)]:
        picture = layout_picture(torch.arange(12).to(dtype), names=["t"])
        scene = layout_scene(picture)
        ticks = [item for item in scene.items if isinstance(item, Line) and item.style == "ruler" and not item.id]
        assert len(ticks) == 13
        # One tooth per byte: a float64 cell spans 8 of them, a float32 cell 4.
        comb = scene.ids()["bytes:0:0"]
        assert len(comb.points) == 3 * (12 * step + 1)
        teeth = sorted({x for x, _ in comb.points})
        cell = scene.ids()["cell:0:storage:0"]
        assert teeth[step] == pytest.approx(cell.x + cell.w) and teeth[1] - teeth[0] == pytest.approx(cell.w / step)
        numbers = {int(i.split(":")[2]): t for i, t in scene.texts() if i.startswith("ruler:")}
        assert numbers[0] == "0" and all(byte % step == 0 for byte in numbers) and max(numbers) == 12 * step
        assert f"({step} bytes per cell)" in picture.notes[-1]
        assert scene.ids()["ruler:0:0"].y > scene.ids()["cell:0:storage:0"].y


def test_a_setting_past_the_storages_end_is_drawn_with_ghost_cells():
    from tutorial_lib.facts.storage import planned_layout

    storage = torch.arange(12.0)
    lay = planned_layout(storage, (3, 4), (4, 1), 2)  # torch refuses: the last two elements run past the end
    with pytest.raises(RuntimeError, match="out of bounds"):
        storage.as_strided((3, 4), (4, 1), 2)
    picture = layout_picture(lay, names=["t"], values_from=storage)
    ghosts = picture.row_cells("t", "ghost")
    assert [(c.index, c.positions) for c in ghosts] == [(12, (10,)), (13, (11,))]
    assert [c.text for c in picture.row_cells("storage")] == [str(k) for k in range(12)]
    assert "t runs past the storage's end (its last element would read index 13, 2 cells past it)" in picture.summary
    assert "dashed red: past the end" in " ".join(picture.notes)
    scene = layout_scene(picture)
    items = scene.ids()
    end = items["cell:0:storage:11"]
    assert items["cell:0:t:12"].x > end.x + end.w and STYLES[items["cell:0:t:12"].style].dash is not None
    assert "past the end of the storage" in items["ghosttext:0"].text
    grid = grid_of(picture, "t")
    assert [e.index for e in grid.elements if e.past_end] == [(2, 2), (2, 3)]
    assert items["elem:t:11"].style == "ghost" and items["elem:t:0"].style == "row0"
    with pytest.raises(ValueError, match="show_values"):
        layout_picture(lay, names=["t"])


def test_only_a_row_past_its_own_storage_end_is_called_refused():
    from tutorial_lib.facts.storage import planned_layout

    # Each row counts in its own dtype: a float32 tensor and its uint8 view read the same 12 bytes, as 3 and 12
    # cells. The uint8 row's last index (11) is past the float32 count (3), yet nothing is out of bounds.
    f = torch.arange(3.0)
    scene = layout_scene(layout_picture(f, f.view(torch.uint8), names=["f", "u"]))
    assert "ghosttext:0" not in scene.ids()
    # A uint8 row over the same bytes that does run past them is named with its own index and cell count.
    lay = planned_layout(f.view(torch.uint8), (14,), (1,), 0)
    scene = layout_scene(layout_picture(f, lay, names=["f", "u"], values_from=f))
    assert scene.ids()["ghosttext:0"].text == "past the end of the storage (12 cells):\nreaches index 13, torch refuses"


def test_a_copys_grid_names_its_own_indices_and_a_row_under_its_storage_names_the_sources(matrix):
    picked = matrix[[0, 2]]
    sources = (0, 1, 2, 3, 8, 9, 10, 11)
    picture = layout_picture(matrix, picked, names=["x", "x[[0, 2]]"], copied={"x[[0, 2]]": ("x", sources)})
    grid = grid_of(picture, "x[[0, 2]]")
    assert grid.source_row == "x" and [e.source for e in grid.elements] == list(sources)
    for element in grid.elements:  # the value it holds is the value of x's cell it names
        assert picked[element.index].item() == matrix.reshape(-1)[element.source].item()
    # One meaning per number: the copy's grid names its own storage indices only, like every grid; where each
    # value came from is said once, in a row "from x" under the copy's storage strip, one number per cell.
    scene = layout_scene(picture)
    drawn, items = dict(scene.texts()), scene.ids()
    assert [drawn[f"elemtext:x[[0, 2]]:{p}"] for p in range(8)] == [str(p) for p in range(8)]
    assert not [i for i in drawn if i.startswith("source:x[[0, 2]]")] and "←" not in "".join(drawn.values())
    assert picture.strips[1].source_row == "x" and picture.strips[1].sources == tuple(enumerate(sources))
    assert [drawn[f"source:1:{k}"] for k in range(8)] == [str(s) for s in sources]
    assert drawn["gutter:1:from x"] == "from x" and not [i for i in drawn if i.startswith("source:0:")]
    for k in range(8):  # under storage 2's cell k (below its byte ruler), centred on it, at no less than 7 pt
        cell, number = items[f"cell:1:storage:{k}"], items[f"source:1:{k}"]
        assert number.x == pytest.approx(cell.x + cell.w / 2) and number.y > items["ruler:1:32"].y > cell.y
        assert (number.size or STYLES[number.style].size) >= 7
    assert items["gutter:1:from x"].y == pytest.approx(items["source:1:0"].y)
    # Side by side, the copy's byte ruler keeps its "bytes" label: its numbers and "from x" are two rows (review 4).
    assert drawn.get("gutter:1:bytes") == "bytes" and "gutter:1:index" not in drawn
    assert items["gutter:1:bytes"].y < items["gutter:1:from x"].y
    assert "x[[0, 2]]'s elements hold the values of x's cells 0, 1, 2, 3, 8, 9, 10, 11" in picture.summary
    assert "from x: under a cell of storage 2, the index of the cell of x's storage whose value it holds" in (
        picture.notes
    )
    for copied, error in [
        ([1], TypeError),
        ({"y": ("x", (0,))}, ValueError),
        ({"x[[0, 2]]": ("x[[0, 2]]", (0,))}, ValueError),
        ({"x[[0, 2]]": ("x", (-1,))}, ValueError),
    ]:
        with pytest.raises(error, match="copied"):
            layout_picture(matrix, picked, names=["x", "x[[0, 2]]"], copied=copied)


def test_lazy_conj_and_neg_views_say_they_read_values_conjugated_or_negated():
    c = torch.tensor([1 + 2j, 3 - 4j], dtype=torch.complex64)
    fig = draw_layout(c, c.conj(), c.conj().imag, names=["c", "c.conj()", "imag"])
    rows = {row.name: row.label for row in fig.layout_picture.rows}
    assert "conjugated: the lazy conj bit" in rows["c.conj()"] and "lazy" not in rows["c"]
    assert c.conj().imag.is_neg() and "negated: the lazy neg bit" in rows["imag"]
    assert "c.conj(): shape (2,) stride (1,) offset 0 (reads each stored value conjugated" in fig.summary
    assert "lazy" not in draw_layout(c.conj().resolve_conj()).summary  # resolved: a copy with plain values


def test_two_storage_objects_over_overlapping_memory_are_not_called_separate():
    import numpy as np

    n = np.arange(10.0)
    a, b = torch.from_numpy(n), torch.from_numpy(n[2:])  # two storages, one numpy buffer
    assert not same_storage(a, b) and np.shares_memory(a.numpy(), b.numpy())
    summary = layout_picture(a, b, names=["a", "b"]).summary
    assert (
        "another storage object over memory a's storage also uses (shared: this one starts at byte 16 of a's)"
        in summary
    )
    assert "not shared" not in summary
    c = torch.arange(10.0)  # its own memory
    assert "separate from a's (not shared)" in layout_picture(a, c, names=["a", "c"]).summary


def _headings(*tensors):
    fig = draw_layout(*tensors, names=[f"t{k}" for k in range(len(tensors))])
    return [
        text.split("\n")[-1].split(" · ")[-1] for ident, text in fig.scene.texts() if ident.startswith("strip:")
    ], fig


def test_storages_are_compared_by_their_bytes_with_every_earlier_storage():
    # Rule hunt (rules-s3): "not shared with storage 1" was decided from storage 1's first row's elements only.
    import numpy as np

    n = np.arange(8, dtype=np.float32)
    for first in (torch.from_numpy(n)[:2], torch.from_numpy(n)[:0], torch.from_numpy(n)[0]):  # also empty, 0-d
        second = torch.from_numpy(n[2:])
        headings, fig = _headings(first, second)
        assert headings[1] == "shares memory with storage 1", (first.shape, headings)
        second[0] = 99.0  # the same bytes: storage 1's cell 2 changes
        assert n[2] == 99.0 and "not shared" not in fig.summary
        n[2] = 2.0
    unrelated, q, r = torch.arange(3.0), torch.from_numpy(n), torch.from_numpy(n[1:])
    headings, fig = _headings(unrelated, q, r)  # storage 3 overlaps storage 2, not storage 1
    assert headings[1:] == ["not shared with storage 1", "shares memory with storage 2"]
    assert "over memory t1's storage also uses (shared: this one starts at byte 4 of t1's)" in fig.summary
    headings, fig = _headings(r, q)  # the later one starts before: said from its side
    assert headings[1] == "shares memory with storage 1" and "t0's starts at its byte 4" in fig.summary
    x = torch.arange(4.0)
    headings, fig = _headings(x, x.clone(), x.clone(), x.clone())
    assert headings[1:] == [
        "not shared with storage 1",
        "not shared with storage 1 or 2",
        "not shared with storages 1–3",
    ]
    assert "separate from t0's and t1's and t2's (not shared)" in fig.summary
    emptied = torch.arange(4.0)
    emptied.untyped_storage().resize_(0)  # no bytes: shares none
    assert _headings(torch.arange(2.0), emptied)[0][1] == "not shared with storage 1"


def test_order_is_compared_only_between_rows_that_read_each_cell_once():
    v = torch.arange(3.0)
    ex = v.expand(4, 3)  # reads 0, 1, 2 four times: the same cells, in the same cyclic order, repeated
    summary = layout_picture(ex, v, names=["ex", "v"]).summary
    assert "v: shape (3,) stride (1,) offset 0 reads the same 3 cells as ex, each once" in summary
    assert "different order" not in summary
    m = torch.arange(4.0).view(2, 2)
    assert "reads the same 4 cells as m in a different order" in layout_picture(m, m.t(), names=["m", "t"]).summary
    assert "in the same order" in layout_picture(v, v[:], names=["v", "w"]).summary


def test_a_storage_that_is_not_a_whole_number_of_elements_says_its_bytes():
    u = torch.arange(7, dtype=torch.uint8)
    f = u[:4].view(torch.float32)  # a float32 over a 7-byte storage: one whole element and 3 bytes
    assert f.untyped_storage().nbytes() == 7
    picture = layout_picture(f, names=["f"], show_values=False)
    assert picture.strips[0].description.startswith("storage of 7 bytes (1 whole float32 and 3 bytes)")


def test_the_summary_says_how_much_of_a_row_past_the_end_is_drawn():
    from tutorial_lib.facts.storage import planned_layout

    storage = torch.arange(12.0)
    near = layout_picture(planned_layout(storage, (3,), (1,), 10), names=["t"], values_from=storage)
    assert len(near.row_cells("t", "ghost")) == 1 and "1 dashed ghost cell drawn just past it" in near.summary
    far = layout_picture(planned_layout(storage, (3,), (1,), 20), names=["t"], values_from=storage)
    assert not far.row_cells("t", "ghost")
    assert f"none drawn (its elements there lie beyond the {GHOST_CELLS} cells drawn past the end)" in far.summary
    split = layout_picture(planned_layout(storage, (3,), (10,), 5), names=["t"], values_from=storage)
    assert (
        len(split.row_cells("t", "ghost")) == 1 and "(only the first 8 cells past the end are drawn)" in split.summary
    )


def test_step_labels_stay_inside_the_picture():
    x = torch.arange(40.0)
    t = x.as_strided((3, 2), (0, 39))  # a long stride-0 label on the shortest arrow, drawn right of the longest
    scene = layout_scene(layout_picture(x, t, names=["x", "t"]))
    for ident, text in scene.texts():
        if ident.startswith("steptext"):
            item, style = scene.ids()[ident], STYLES[scene.ids()[ident].style]
            assert item.x + text_width(text, style.family, style.size) <= scene.width


# ------------------------------------------------------------------------- what the summary says a row reads
# Issue 20 (fact-check #17): a transpose "reads 12 elements within cells 0–11, not contiguously" (it reads every
# cell once, in another order) and an expand of one element "reads cell 0 only, each 12 times". Every sentence
# now says which cells and how often, and each claim is checked against the storage indices torch reads.

_NUMBER = r"(\d[\d,]*)"
_OFTEN = rf"(each once|each {_NUMBER} times|{_NUMBER} to {_NUMBER} times each)"
_BYTES = rf"(?: \(bytes {_NUMBER}–{_NUMBER}\))?"
_READS = {
    "contiguous": re.compile(
        rf"reads (?:cell {_NUMBER}|cells {_NUMBER}–{_NUMBER}|bytes {_NUMBER}–{_NUMBER}) \(contiguous\)"
    ),
    "permuted": re.compile(rf"reads all {_NUMBER} cells {_NUMBER}–{_NUMBER}{_BYTES}, each once, in another order"),
    "one cell": re.compile(rf"reads cell {_NUMBER}{_BYTES} only, {_NUMBER} times( \(stride 0 repeats it\))?"),
    "all cells": re.compile(
        rf"reads all {_NUMBER} cells {_NUMBER}–{_NUMBER}{_BYTES}, {_OFTEN}( \(stride 0 repeats them\))?"
    ),
    "some cells": re.compile(
        rf"reads {_NUMBER} of the {_NUMBER} cells {_NUMBER}–{_NUMBER}{_BYTES}, {_OFTEN}( \(stride 0 repeats them\))?"
    ),
    "unknown": re.compile(rf"reads {_NUMBER} elements within cells {_NUMBER}–{_NUMBER}{_BYTES}"),
    "empty": re.compile(r"reads nothing \(no elements\)"),
}


def _int(text: str) -> int:
    return int(text.replace(",", ""))


def _often_truth(groups, counts) -> None:
    """The 'each once' / 'each k times' / 'a to b times each' groups against the read counts."""
    text, each, fewest, most = groups
    if text == "each once":
        assert counts.max() == 1
    elif each is not None:
        assert counts.min() == counts.max() == _int(each)
    else:
        assert (counts.min(), counts.max()) == (_int(fewest), _int(most)) and _int(fewest) < _int(most)


def check_reads_sentence(sentence: str, t: torch.Tensor) -> str:
    """Match ``sentence`` (a row's reads text) to one form and check every number in it against torch."""
    import numpy as np

    storage_numel = t.untyped_storage().nbytes() // t.element_size()
    indices = torch.arange(storage_numel).as_strided(t.shape, t.stride(), t.storage_offset()).reshape(-1).numpy()
    cells, counts = np.unique(indices, return_counts=True)
    zero = any(step == 0 and size > 1 for size, step in zip(t.shape, t.stride()))
    matched = [(form, pattern.fullmatch(sentence)) for form, pattern in _READS.items()]
    matched = [(form, match) for form, match in matched if match]
    assert len(matched) == 1, f"no single sentence form: {sentence!r}"
    form, match = matched[0]
    g = match.groups()
    if form == "empty":
        assert t.numel() == 0
        return form
    low, high = int(cells.min()), int(cells.max())
    if form == "contiguous":
        assert indices.tolist() == list(range(low, high + 1))  # every cell of the range once, in storage order
        if g[0] is not None:
            assert low == high == _int(g[0])
        elif g[1] is not None:
            assert (_int(g[1]), _int(g[2])) == (low, high)
        else:
            assert (_int(g[3]), _int(g[4])) == (low * t.element_size(), (high + 1) * t.element_size() - 1)
    elif form == "permuted":
        assert (_int(g[0]), _int(g[1]), _int(g[2])) == (len(cells), low, high) == (high - low + 1, low, high)
        assert counts.max() == 1 and indices.tolist() != list(range(low, high + 1))
    elif form == "one cell":
        assert len(cells) == 1 and _int(g[0]) == low and _int(g[3]) == t.numel() > 1
        assert bool(g[4]) == zero
    elif form == "all cells":
        assert (_int(g[0]), _int(g[1]), _int(g[2])) == (len(cells), low, high) == (high - low + 1, low, high)
        _often_truth(g[5:9], counts)
        assert counts.max() > 1 and bool(g[9]) == zero
    elif form == "some cells":
        assert (_int(g[0]), _int(g[1]), _int(g[2]), _int(g[3])) == (len(cells), high - low + 1, low, high)
        assert len(cells) < high - low + 1  # there are gaps
        _often_truth(g[6:10], counts)
        assert bool(g[10]) == zero
    elif form == "unknown":  # said only past the listing, where overlap could not be ruled out cheaply
        assert (_int(g[0]), _int(g[1]), _int(g[2])) == (t.numel(), low, high) and t.numel() > MAX_LISTED
    return form


def row_sentence(summary: str, name: str) -> str:
    """The reads text of row ``name`` in a summary: after 'offset N [as dtype (k bytes each)] '."""
    part = next(p for p in summary.split("; ") if p.startswith(f"{name}: "))
    return re.sub(r"^.*? offset \d+ (?:as \w+ \(\d+ bytes? each\) )?", "", part)


@st.composite
def strided_tensors(draw):
    """A random strided tensor over an arange storage: any sizes (0 too), strides (0 too, overlapping too), offset;
    one in six longer than the picture lists (so the counts past the listing are checked too)."""
    dims = draw(st.integers(0, 4))
    if draw(st.integers(0, 3)) == 0:  # a permuted contiguous tensor, sometimes with a dimension expanded
        shape = [draw(st.integers(1, 5)) for _ in range(dims)]
        t = torch.arange(math.prod(shape)).reshape(shape).permute(tuple(draw(st.permutations(range(dims)))))
        return t.unsqueeze(0).expand(draw(st.integers(1, 3)), *t.shape) if draw(st.booleans()) else t
    big = draw(st.integers(0, 5)) == 0 and dims > 0
    shape = [draw(st.integers(0, 5)) for _ in range(dims)]
    if big:
        shape[draw(st.integers(0, dims - 1))] = draw(st.integers(MAX_LISTED // 4, MAX_LISTED + 5000))
        shape = [max(size, 1) for size in shape]
    stride = [draw(st.sampled_from([0, 1, 1, 2, 3, 4, 5, 7, 12, 20])) for _ in range(dims)]
    offset = draw(st.integers(0, 6))
    needed = offset + sum((n - 1) * s for n, s in zip(shape, stride)) + 1 if all(shape) else offset + 1
    dtype = draw(st.sampled_from([torch.float32, torch.int64, torch.uint8]))
    return torch.arange(needed + draw(st.integers(0, 3))).to(dtype).as_strided(shape, stride, offset)


@settings(max_examples=120)
@given(strided_tensors())
def test_every_reads_sentence_is_true_for_random_layouts(t):
    summary = layout_summary(t, names=["t"])
    check_reads_sentence(row_sentence(summary, "t"), t)


@settings(max_examples=40)
@given(strided_tensors())
def test_reads_sentences_with_bytes_are_true_beside_a_row_of_another_itemsize(t):
    if t.element_size() == 1:
        return
    whole = t.untyped_storage()
    first = torch.empty(0, dtype=torch.uint8).set_(whole)  # the whole storage as bytes: the strip's first row
    summary = layout_summary(first, t, names=["bytes", "t"])
    sentence = row_sentence(summary, "t").split(", reads the same")[0]
    sentence = re.sub(r", (?:\d[\d,]* of bytes's|shares|all \d).*$", "", sentence)
    if not sentence.startswith("reads the same"):
        check_reads_sentence(sentence, t)


@pytest.mark.parametrize(
    "tensor, sentence",
    [
        (torch.arange(12.0).reshape(3, 4).t(), "reads all 12 cells 0–11, each once, in another order"),
        (torch.tensor(5.0).expand(3, 4), "reads cell 0 only, 12 times (stride 0 repeats it)"),
        (torch.arange(12.0).reshape(3, 4)[:, ::2], "reads 6 of the 11 cells 0–10, each once"),
        (torch.arange(3.0).view(3, 1).expand(3, 4), "reads all 3 cells 0–2, each 4 times (stride 0 repeats them)"),
        (torch.zeros(1).expand(10**8), "reads cell 0 only, 100,000,000 times (stride 0 repeats it)"),
    ],
)
def test_the_fact_checks_examples_read_as_they_should(tensor, sentence):
    assert row_sentence(layout_summary(tensor, names=["t"]), "t") == sentence
    check_reads_sentence(sentence, tensor)


def test_chapter_2s_view_and_copy_are_drawn_in_tints_no_verdict_colour_could_be_taken_for():
    # Issue 22: in chapter 2's picture the view x[::2] was drawn orange (the COPY hue) and the copy yellow.
    x = torch.arange(100.0, 112.0).view(3, 4)
    fig = draw_layout(x, x[::2], x[[0, 2]], names=["x", "x[::2]", "x[[0, 2]]"])
    fills = {}
    for item in fig.scene.items:
        if item.id and item.style.startswith("row"):
            name = next(n for n in ("x[[0, 2]]", "x[::2]", "x") if f":{n}:" in item.id)
            fills.setdefault(name, set()).add(fig.scene.styles[item.style].fill)
    assert fills == {name: {palette.tensor_colour(k)} for k, name in enumerate(["x", "x[::2]", "x[[0, 2]]"])}
    for name, (fill,) in fills.items():
        assert not colours.near_a_verdict(fill), (name, fill, colours.near_a_verdict(fill))
