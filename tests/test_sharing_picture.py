"""Chapter 4's 2 x 2 picture: each expression's chip sits in the cell torch put it in (``tl.sharing_of``), with its
autograd note, and the summary lists the cells."""

import matplotlib

matplotlib.use("Agg")

import pytest  # noqa: E402
import torch  # noqa: E402

import tutorial_lib as tl  # noqa: E402
from tutorial_lib.pictures import palette  # noqa: E402
from tutorial_lib.pictures.render_svg import svg  # noqa: E402
from tutorial_lib.pictures.scene import Rect, Text, size_of  # noqa: E402
from tutorial_lib.pictures.sharing_picture import sharing_scene  # noqa: E402


def inside(item, cell):
    return (
        cell.x <= item.x
        and item.x + item.w <= cell.x + cell.w
        and cell.y <= item.y
        and item.y + item.h <= cell.y + cell.h
    )


def cell_of(scene, name):
    ids = scene.ids()
    cells = [key for key, item in ids.items() if key.startswith("cell:") and inside(ids[f"chip:{name}"], item)]
    assert len(cells) == 1, (name, cells)
    return cells[0]


def test_each_chip_is_in_the_cell_torch_computed():
    fig = tl.draw_sharing()
    scene = fig.scene
    assert {row.name: cell_of(scene, row.name) for row in fig.sharing} == {
        "x": "cell:shared:reaches",
        "x.clone()": "cell:own:reaches",
        "x.detach()": "cell:shared:stops",
        "x.data": "cell:shared:stops",
        "copy.copy(x)": "cell:shared:stops",
        "x.detach().clone()": "cell:own:stops",
    }
    ids = scene.ids()
    # the rows and columns are named in place, on the side of the cells they name
    assert ids["row:shared"].text == "shares x's memory" and ids["row:own"].text == "memory of its own"
    assert ids["column:reaches"].text == "a gradient reaches x"
    assert ids["row:shared"].x < ids["cell:shared:reaches"].x
    assert ids["column:reaches"].y < ids["cell:shared:reaches"].y < ids["cell:own:reaches"].y
    assert ids["cell:shared:reaches"].x < ids["cell:shared:stops"].x
    # x's memory is storage grey, a memory of its own is paper: a fill role, and the row's words beside it
    assert scene.styles[ids["cell:shared:stops"].style].fill == palette.STORAGE
    assert scene.styles[ids["cell:own:stops"].style].fill == palette.PAPER
    texts = dict(scene.texts())
    assert texts["expression:x.clone()"] == "x.clone()" and texts["note:x.clone():0"] == "grad_fn CloneBackward0"
    assert texts["note:copy.copy(x):0"] == "a leaf that requires grad"
    assert texts["note:x.detach():0"] == "requires no grad"
    assert "note:x.data:1" not in texts  # the counter is said only when asked
    assert fig.summary == (
        "shares x's memory, a gradient reaches x: x; shares x's memory, no gradient reaches x: x.detach(), x.data, "
        "copy.copy(x); memory of its own, a gradient reaches x: x.clone(); memory of its own, no gradient reaches x: "
        "x.detach().clone()"
    )


def test_own_ways_are_placed_by_running_them_and_an_empty_cell_says_none():
    w = torch.ones(4, requires_grad=True)
    ways = {"x * 1": lambda x: x * 1, "x[1:]": lambda x: x[1:]}
    fig = tl.draw_sharing(w * 2, ways)
    assert cell_of(fig.scene, "x * 1") == "cell:own:reaches" and cell_of(fig.scene, "x[1:]") == "cell:shared:reaches"
    texts = dict(fig.scene.texts())
    assert texts["empty:shared:stops"] == texts["empty:own:stops"] == "none"
    assert "no gradient reaches x: none" in fig.summary


def test_the_counter_is_said_for_memory_shared_and_data_has_its_own():
    texts = dict(tl.draw_sharing(show_counter=True).scene.texts())
    assert texts["note:x.detach():1"] == "x's version counter"
    assert texts["note:x.data:1"] == texts["note:copy.copy(x):1"] == "its own version counter"
    assert "note:x.clone():1" not in texts  # own memory: nothing to confuse


def test_chips_of_a_column_are_one_width_and_text_stays_readable():
    scene = tl.draw_sharing(show_counter=True).scene
    ids = scene.ids()
    stops = {ids[f"chip:{name}"].w for name in ("x.detach()", "x.data", "copy.copy(x)", "x.detach().clone()")}
    assert len(stops) == 1
    chips = [item for item in scene.items if isinstance(item, Rect) and item.id.startswith("chip:")]
    for chip in chips:  # chips do not overlap
        others = [o for o in chips if o is not chip and o.x == chip.x]
        assert all(o.y >= chip.y + chip.h or o.y + o.h <= chip.y for o in others)
    assert min(size_of(item, scene.styles) for item in scene.items if isinstance(item, Text)) >= palette.MIN_TEXT_PT


def test_both_renderers_draw_it():
    scene = sharing_scene(tl.sharing_of())
    document = svg(scene)
    assert 'id="chip:x.data"' in document and "<title>" in document
    fig = tl.draw_sharing()
    assert fig.get_size_inches()[0] < 8  # fits a notebook column


@pytest.mark.parametrize(
    ("kwargs", "error", "named"), [({"show_counter": 1}, TypeError, "show_counter"), ({"ax": 3}, TypeError, "ax")]
)
def test_bad_arguments_are_refused_by_name(kwargs, error, named):
    with pytest.raises(error, match=named):
        tl.draw_sharing(**kwargs)
