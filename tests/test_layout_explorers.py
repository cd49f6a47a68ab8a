"""The explorers driven like a learner would, by setting widget values; checked against torch itself.

No browser: widgets are plain traitlets objects, and setting ``.value`` runs the explorer's update.
Pictures are checked on the explorer's ``scene`` (plain data), never on matplotlib artists.
Update times are measured in benchmarks/bench_explorers.py, never asserted here.
"""

import html
import re

import matplotlib

matplotlib.use("Agg")

import colours  # noqa: E402
import pytest  # noqa: E402
import torch  # noqa: E402
from ground_truth import truth_map  # noqa: E402
from hypothesis import given  # noqa: E402
from hypothesis import strategies as st  # noqa: E402
from matplotlib.figure import Figure  # noqa: E402

import tutorial_lib as tl  # noqa: E402
from tutorial_lib.explorers.layout_explorers import (  # noqa: E402
    HOVER_OUTLINE,
    HOVER_ROW,
    NO_COMPARISON,
    OPERATIONS,
    TABLE_HEIGHT,
    TABLE_ROWS,
    VERDICT_BADGES,
    StrideExplorer,
    ViewCopyExplorer,
    copied_from,
    hover_css,
    parse_ints,
    run_operation,
    sources_html,
    stride_explorer,
    verdict_html,
    view_copy_explorer,
)
from tutorial_lib.pictures import palette  # noqa: E402


def table_rows(markup: str) -> list[list[str]]:
    """The cell texts of every row of the HTML tables in ``markup``, header row first."""
    return [
        [re.sub(r"<[^>]*>", "", cell) for cell in re.findall(r"<t[dh]\b[^>]*>(.*?)</t[dh]>", row)]
        for row in re.findall(r"<tr\b[^>]*>(.*?)</tr>", markup)
    ]


def set_layout(explorer, shape, stride, offset=0):
    explorer.shape.value = shape
    explorer.stride.value = stride
    explorer.offset.value = offset


# ------------------------------------------------------------------------------------------ stride explorer


def test_stride_explorer_starts_as_a_contiguous_matrix():
    explorer = stride_explorer()
    assert isinstance(explorer, StrideExplorer)
    assert (explorer.shape.value, explorer.stride.value, explorer.offset.value) == ("3, 4", "4, 1", 0)
    assert explorer.layout_model.shape == (3, 4) and explorer.layout_model.is_contiguous
    assert explorer.error == "" and explorer.message.value == ""
    assert explorer.summary == (
        "storage of 12 float32 (48 bytes); t: shape (3, 4) stride (4, 1) offset 0 reads cells 0–11 "
        "(contiguous); each tensor is also drawn as a grid of its shape, each element naming the storage index it "
        "reads; t.is_contiguous() is True"
    )
    assert "<svg" in explorer.picture_view.value and "t.is_contiguous()</b>: yes" in explorer.table.value


def test_setting_widgets_updates_model_picture_and_table_like_torch():
    explorer = stride_explorer()
    set_layout(explorer, "4, 3", "1, 4")
    truth = explorer.storage.as_strided((4, 3), (1, 4), 0)
    assert explorer.layout_model.stride == (1, 4) and not explorer.layout_model.is_contiguous
    assert explorer.picture.read_map("t") == truth_map(truth)
    assert "t.is_contiguous() is False" in explorer.summary
    assert "t.is_contiguous()</b>: no" in explorer.table.value
    # The address table: element -> index -> storage index -> byte offset, checked with data pointers.
    base = truth.untyped_storage().data_ptr()
    for position, index, storage_index, byte_offset in explorer.addresses:
        assert index == divmod(position, 3)
        assert truth[index].data_ptr() - base == byte_offset == storage_index * 4
    header, *rows = table_rows(explorer.table.value)
    assert header == ["element", "storage index", "byte offset"]
    assert rows == [[f"t[{i}, {j}]", str(s), str(b)] for _, (i, j), s, b in explorer.addresses]


def test_the_text_fields_update_when_an_edit_is_complete_not_on_every_keystroke():
    explorer = stride_explorer()
    # continuous_update=False: the browser sends the value on Enter or when the field loses focus, so a
    # half-typed "4," never reaches update() (no error flash, no faded picture while typing).
    assert [field.continuous_update for field in (explorer.shape, explorer.stride, explorer.offset)] == [False] * 3
    before = explorer.picture_view.value
    explorer.shape.value = "4, 3"  # what arrives on Enter: a complete edit, drawn at once
    explorer.stride.value = "1, 4"
    assert explorer.picture_view.value != before and explorer.layout_model.stride == (1, 4)
    assert "press Enter" in explorer.widget.children[0].children[-1].value


def test_the_address_table_is_compact_and_scrolls_when_long():
    explorer = stride_explorer(storage_size=256)
    set_layout(explorer, "16, 16", "1, 16")
    markup = explorer.table.value
    assert f"max-height:{TABLE_HEIGHT};overflow-y:auto" in markup and "border-collapse:collapse" in markup
    header, *rows = table_rows(markup)
    assert len(rows) == len(explorer.addresses) == TABLE_ROWS and "… 192 more elements" in markup
    assert rows[:2] == [["t[0, 0]", "0", "0"], ["t[0, 1]", "16", "64"]]
    assert "position:sticky" in markup  # the header row stays in view while the rows scroll


def test_offset_and_expand_settings():
    explorer = stride_explorer()
    set_layout(explorer, "2, 2", "4, 1", 5)
    assert explorer.picture.read_map("t") == {5: (0,), 6: (1,), 9: (2,), 10: (3,)}
    set_layout(explorer, "3, 4", "0, 1", 0)
    assert explorer.picture.read_map("t") == {k: (k, k + 4, k + 8) for k in range(4)}
    assert "stride 0 repeats them" in explorer.summary


@pytest.mark.parametrize(
    "shape, stride, offset, words",
    [
        ("3, 4", "4, 1", 1, "Out of bounds"),
        ("3, 4", "5, 1", 0, "Out of bounds"),
        ("3, 4", "-4, 1", 0, "Negative strides are not allowed"),
        ("3, 4", "4, 1", -1, "storage offset must be 0 or more"),
        ("-3, 4", "4, 1", 0, "Every size in the shape must be 0 or more"),
        ("3, 4", "4", 0, "same number of entries"),
        ("3, x", "4, 1", 0, "shape must be whole numbers"),
        ("3, 4", "4.5, 1", 0, "stride must be whole numbers"),
    ],
)
def test_impossible_settings_are_explained_never_raised(shape, stride, offset, words):
    explorer = stride_explorer()
    set_layout(explorer, shape, stride, offset)
    assert words in explorer.error
    assert words in explorer.message.value and "⚠" in explorer.message.value
    assert explorer.summary.startswith("invalid setting: ")
    assert explorer.tensor is None
    if words == "Out of bounds":  # drawn as it would be, its elements past the end as ghost cells
        assert explorer.picture.row_cells("t", "ghost") and explorer.figure is not None
        assert "opacity:0.3" not in explorer.picture_view.value and "dashed ghost cells" in explorer.summary
    else:
        assert explorer.layout_model is None and explorer.picture is None and explorer.figure is None
        assert "opacity:0.3" in explorer.picture_view.value  # the last valid picture stays, faded
    set_layout(explorer, "3, 4", "4, 1", 0)
    assert explorer.error == "" and explorer.message.value == "" and explorer.layout_model.shape == (3, 4)


def test_out_of_bounds_message_quotes_torch():
    explorer = stride_explorer()
    explorer.offset.value = 1
    assert "requiring a storage size of 52 are out of bounds for storage of size 48" in explorer.message.value
    assert "12 float32 elements (storage indices 0 to 11)" in explorer.error


@given(
    shape=st.lists(st.integers(0, 4), min_size=0, max_size=3),
    stride=st.lists(st.integers(-1, 6), min_size=0, max_size=3),
    offset=st.integers(-1, 12),
)
def test_torch_is_the_judge_of_every_setting(shape, stride, offset):
    explorer = StrideExplorer(storage_size=12)
    set_layout(explorer, ", ".join(map(str, shape)), ", ".join(map(str, stride)), offset)
    try:
        truth = torch.arange(12.0).as_strided(shape, stride, offset)
    except RuntimeError:
        truth = None
    if truth is None:
        assert explorer.tensor is None and explorer.error
    else:
        assert explorer.error == ""
        assert explorer.picture.read_map("t") == truth_map(truth)
        assert explorer.layout_model.is_contiguous == truth.is_contiguous()


def test_contiguous_button_fills_in_torchs_strides():
    explorer = stride_explorer()
    explorer.shape.value = "2, 3, 2"
    assert "same number of entries" in explorer.error
    explorer.contiguous_button.click()
    assert explorer.stride.value == ", ".join(map(str, torch.empty(2, 3, 2).stride())) == "6, 2, 1"
    assert explorer.error == "" and explorer.layout_model.is_contiguous


def test_dtype_changes_itemsize_and_byte_addresses():
    explorer = stride_explorer()
    explorer.dtype.value = "int16"
    assert explorer.storage.dtype == torch.int16 and explorer.storage.tolist() == list(range(100, 112))
    assert explorer.layout_model.itemsize == 2
    assert [b for *_, b in explorer.addresses] == [2 * k for k in range(12)]
    assert explorer.summary.startswith("storage of 12 int16 (24 bytes)")
    explorer.dtype.value = "float64"
    assert [b for *_, b in explorer.addresses][:3] == [0, 8, 16]


def svg_attribute(markup: str, name: str) -> str:
    """The value of attribute ``name`` on the first ``<svg>`` tag of ``markup``."""
    tag = re.search(r"<svg\b[^>]*>", markup).group(0)
    return re.search(rf'\s{name}="([^"]*)"', tag).group(1)


def test_scene_and_figure_follow_the_state_in_one_reused_figure():
    import matplotlib.pyplot as plt

    explorer = stride_explorer()
    first, first_scene = explorer.figure, explorer.scene
    assert isinstance(first, Figure) and first_scene.title == explorer.picture.summary
    set_layout(explorer, "4, 3", "1, 4")
    second = explorer.figure
    assert second is first and explorer.scene != first_scene and explorer.scene.title == explorer.picture.summary
    width, height = second.get_size_inches() * 72
    scale = explorer.scene.scale()
    assert (round(width), round(height)) == (round(explorer.scene.width * scale), round(explorer.scene.height * scale))
    assert plt.get_fignums() == []


def test_the_picture_is_inline_svg_at_the_scenes_size_within_the_page():
    widths = []
    for explorer in (stride_explorer(4), stride_explorer(24)):
        scene, markup = explorer.scene, explorer.picture_view.value
        assert "<img" not in markup and scene.scale() == 1
        assert svg_attribute(markup, "width") == f"{scene.width:.1f}pt"
        assert svg_attribute(markup, "height") == f"{scene.height:.1f}pt"
        assert "max-width:100%" in svg_attribute(markup, "style")
        widths.append(scene.width)
    assert widths[0] < widths[1]  # the sizes follow the pictures
    explorer.stride.value = "-1, 1"  # impossible: the last picture stays, faded
    assert explorer.scene is None and explorer.figure is None
    assert "opacity:0.3" in explorer.picture_view.value and svg_attribute(explorer.picture_view.value, "width") == (
        f"{widths[1]:.1f}pt"
    )


def test_big_shapes_with_stride_zero_stay_cheap():
    explorer = stride_explorer()
    set_layout(explorer, "1000, 1000", "0, 0")
    assert explorer.error == "" and explorer.layout_model.numel == 10**6
    assert len(explorer.addresses) == TABLE_ROWS and "more elements" in explorer.table.value


def test_stride_explorer_displays_as_widgets_with_the_summary_as_text():
    explorer = stride_explorer()
    bundle = explorer._repr_mimebundle_()
    assert bundle["application/vnd.jupyter.widget-view+json"]["model_id"] == explorer.widget.model_id
    assert bundle["text/plain"] == f"StrideExplorer: {explorer.summary}"


@pytest.mark.parametrize(
    "kwargs, error, words",
    [
        ({"storage_size": 0}, ValueError, "storage_size"),
        ({"storage_size": 5000}, ValueError, "storage_size"),
        ({"storage_size": "12"}, TypeError, "storage_size"),
        ({"dtype": "float32"}, TypeError, "dtype"),
        ({"dtype": torch.complex64}, ValueError, "dtype"),
    ],
)
def test_stride_explorer_bad_arguments(kwargs, error, words):
    with pytest.raises(error, match=words):
        stride_explorer(**kwargs)


def test_parse_ints():
    assert parse_ints("3, 4", "shape") == (3, 4)
    assert parse_ints("(3,)", "shape") == (3,)
    assert parse_ints("[2 3 4]", "shape") == (2, 3, 4)
    assert parse_ints(" ", "shape") == () == parse_ints("()", "shape")
    assert parse_ints("-1, 2", "stride") == (-1, 2)
    with pytest.raises(ValueError, match="stride must be whole numbers"):
        parse_ints("1, two", "stride")
    with pytest.raises(TypeError, match="shape"):
        parse_ints((3, 4), "shape")


# ------------------------------------------------------------------------------------- view/copy explorer

EXPECTED = {
    "x.t()": "view",
    "x[0]": "view",
    "x[:, 1]": "view",
    "x[[0, 2]]": "copy",
    "x.index_select(0, torch.tensor([0, 2]))": "copy",
    "x.masked_select(x > 105)": "copy",
    "x.gather(1, torch.tensor([[0], [1], [2]]))": "copy",
    "x.flip(0)": "copy",
    "x.reshape(-1)": "view",
    "x.t().reshape(-1)": "copy",
    "x.contiguous()": "same tensor",
    "x.t().contiguous()": "copy",
    "x[0].expand(3, 4)": "view",
    "x.view(torch.uint8)": "view",
    "x.clone()": "copy",
    "x.detach()": "view",
    "x.add_(1)": "in-place",
}


@pytest.mark.parametrize("expression", list(EXPECTED))
def test_each_operation_reports_what_torch_did(expression):
    x = torch.arange(12.0).reshape(3, 4)
    explorer = view_copy_explorer(x)
    explorer.operation.value = expression
    assert explorer.row.verdict == EXPECTED[expression]
    # Ground truth, straight from torch: does the result live in x's storage?
    fresh = x.clone()
    result = eval(expression, {"torch": torch}, {"x": fresh})
    same = result.untyped_storage().data_ptr() == fresh.untyped_storage().data_ptr()
    assert same == (EXPECTED[expression] != "copy")
    if same:
        assert explorer.row.new_bytes == 0
        assert len(explorer.picture.strips) == 1  # drawn over x's storage
        assert explorer.picture.read_map(expression) == truth_map(result)
    else:
        assert explorer.row.new_bytes == result.untyped_storage().nbytes()
        assert len(explorer.picture.strips) == 2  # a storage of its own, drawn apart
        assert "separate from x's (not shared)" in explorer.summary
    assert explorer.layout_model.shape == tuple(result.shape)
    assert explorer.summary.startswith(f"{expression}: {EXPECTED[expression]}, allocates {explorer.row.new_bytes:,}")
    assert badge(explorer.verdict.value)[0] == BADGES[EXPECTED[expression]]
    assert "<svg" in explorer.after_view.value
    assert torch.equal(x, torch.arange(12.0).reshape(3, 4))  # x itself is never changed


BADGES = {
    "view": "VIEW",
    "alias": "ALIAS",
    "copy": "COPY",
    "in-place": "IN-PLACE",
    "same tensor": "SAME TENSOR",
    "existing memory": "EXISTING",
}


def badge(markup: str) -> tuple[str, str]:
    """The word on the verdict badge in ``markup`` and its background colour."""
    found = re.search(r'<span style="[^"]*background:(#[0-9A-Fa-f]{6});[^"]*">([^<]*)</span>', markup)
    return found.group(2), found.group(1)


@pytest.mark.parametrize("expression", ["x.t()", "x.clone()", "x.add_(1)", "x.contiguous()", "x.data", "x.grad"])
def test_the_verdict_is_a_large_badge_with_the_word_and_a_sentence(expression):
    x = torch.arange(12.0).reshape(3, 4)
    if expression == "x.grad":  # memory x holds, not x's own
        x.requires_grad_()
        (x * 2).sum().backward()
    explorer = view_copy_explorer(x, operations=[expression])
    explorer.operation.value = expression
    verdict = explorer.row.verdict
    word, colour = badge(explorer.verdict.value)
    assert word == BADGES[verdict] and colour == VERDICT_BADGES[verdict][1]
    assert "font:bold 26px" in explorer.verdict.value and 'role="status"' in explorer.verdict.value
    # The verdict in words too, for screen readers and for readers without colour.
    says = {
        "view": "is a view of x",
        "alias": "shares x&#x27;s memory but not its version counter",
        "copy": "is a copy",
        "in-place": "changes x in place",
        "existing memory": "returns memory x held before, not x&#x27;s own",
    }
    sentence = f"<code>{html.escape(expression)}</code> {says.get(verdict, 'returns x itself')}: "
    assert sentence in explorer.verdict.value


def test_every_verdict_has_its_own_colour_and_word():
    words = [word for word, *_ in VERDICT_BADGES.values()]
    colours = [colour for _, colour, *_ in VERDICT_BADGES.values()]
    assert len(set(words)) == len(words) == len(set(colours)) == len(BADGES)
    assert set(VERDICT_BADGES) == set(BADGES)


def test_there_is_no_before_picture_only_x_and_the_result():
    explorer = view_copy_explorer()
    shown = "".join(getattr(child, "value", "") for child in explorer.widget.children)
    assert "before" not in shown and not hasattr(explorer, "before_view")
    assert [row.name for row in explorer.picture.rows] == ["x", "x.t()"]
    assert explorer.after_view.value.count("<svg") == 1


def test_two_operations_side_by_side_each_with_its_badge():
    explorer = view_copy_explorer()
    assert explorer.compare.value == NO_COMPARISON and explorer.compared is None
    assert explorer.compare_panel.layout.display == "none" and explorer.compare_view.value == ""
    summary_alone = explorer.summary
    explorer.compare.value = "x.t().contiguous()"
    assert explorer.compare_panel.layout.display is None  # shown, beside the first
    assert badge(explorer.verdict.value)[0] == "VIEW" and badge(explorer.compare_verdict.value)[0] == "COPY"
    assert explorer.compared.row.verdict == "copy" and explorer.compared.row.new_bytes == 48
    assert explorer.compare_view.value.count("<svg") == 1 and explorer.compare_view.value != explorer.after_view.value
    assert explorer.summary == f"{summary_alone} · compared with {explorer.compared.summary}"
    assert explorer.compared.summary.startswith("x.t().contiguous(): copy, allocates 48 bytes")
    panels = explorer.widget.children[-1]
    assert panels.layout.flex_flow == "row wrap" and panels.children[1] is explorer.compare_panel
    explorer.operation.value = "x.clone()"  # changing the first keeps the comparison
    assert badge(explorer.verdict.value)[0] == "COPY" and explorer.compared.expression == "x.t().contiguous()"
    explorer.compare.value = NO_COMPARISON
    assert explorer.compared is None and explorer.compare_panel.layout.display == "none"
    assert explorer.summary.startswith("x.clone(): copy") and "compared with" not in explorer.summary


def test_a_compared_operation_that_fails_is_explained_in_its_own_panel():
    explorer = ViewCopyExplorer(torch.arange(5.0), operations=["x[0]", "x[:, 1]"])
    explorer.compare.value = "x[:, 1]"
    assert explorer.row.verdict == "view" and explorer.message.value == ""
    assert "⚠ x[:, 1] cannot run on this x: IndexError" in explorer.compare_verdict.value
    assert explorer.compare_view.value == "" and "compared with x[:, 1] cannot run" in explorer.summary


def test_run_operation_never_raises_on_the_operations_account():
    x = torch.arange(6.0)
    assert run_operation(x, "x.view(2, 3)").row.verdict == "view"
    failed = run_operation(x, "x.view(4, 4)")
    assert failed.row is None and failed.scene is None and "RuntimeError" in failed.summary
    assert "⚠" in verdict_html(failed)
    with pytest.raises(TypeError, match="expression"):
        run_operation(x, 3)
    with pytest.raises(TypeError, match="outcome"):
        verdict_html("view")


def test_every_default_operation_runs_on_the_default_x():
    explorer = view_copy_explorer()
    for expression in OPERATIONS:
        explorer.operation.value = expression
        assert explorer.row is not None, explorer.summary
        assert explorer.scene.title == explorer.picture.summary


def test_in_place_result_shows_the_changed_values():
    explorer = view_copy_explorer()
    explorer.operation.value = "x.add_(1)"
    storage = explorer.picture.row_cells("storage")
    assert [c.text for c in storage] == [str(k + 101) for k in range(12)]
    assert "shares memory with x" in explorer.summary


def test_an_operation_that_fails_for_this_x_is_explained():
    explorer = ViewCopyExplorer(torch.arange(5.0), operations=["x[0]", "x[:, 1]", "x.tolist()"])
    explorer.operation.value = "x[:, 1]"
    assert explorer.row is None and explorer.scene is None and explorer.figure is None
    assert "x[:, 1] cannot run on this x: IndexError" in explorer.summary
    assert "IndexError" in explorer.message.value
    explorer.operation.value = "x.tolist()"
    assert "not a tensor" in explorer.summary
    explorer.operation.value = "x[0]"
    assert explorer.row.verdict == "view" and explorer.message.value == ""


def test_view_copy_explorer_displays_as_widgets_with_the_summary_as_text():
    explorer = view_copy_explorer()
    bundle = explorer._repr_mimebundle_()
    assert "application/vnd.jupyter.widget-view+json" in bundle
    assert bundle["text/plain"].startswith("ViewCopyExplorer: x.t(): view, allocates 0 bytes")
    assert bundle["text/plain"] == explorer.plain_text() == f"ViewCopyExplorer: {explorer.summary}"


def test_the_factories_are_the_public_api_and_the_classes_stay_in_their_module():
    assert "stride_explorer" in tl.__all__ and "view_copy_explorer" in tl.__all__
    assert not {"StrideExplorer", "ViewCopyExplorer"} & set(tl.__all__) and not hasattr(tl, "StrideExplorer")
    assert isinstance(tl.stride_explorer(), StrideExplorer) and isinstance(tl.view_copy_explorer(), ViewCopyExplorer)


@pytest.mark.parametrize(
    "kwargs, error, words",
    [
        ({"x": [1, 2]}, TypeError, "x must be a torch.Tensor"),
        ({"x": torch.empty(2, device="meta")}, ValueError, "x is a meta tensor"),
        ({"operations": "x.t()"}, TypeError, "operations"),
        ({"operations": []}, ValueError, "operations is empty"),
        ({"operations": ["x.t()", 3]}, TypeError, r"operations\[1\]"),
    ],
)
def test_view_copy_explorer_bad_arguments(kwargs, error, words):
    with pytest.raises(error, match=words):
        view_copy_explorer(**kwargs)


# ------------------------------------------------------------------------- grids, ghosts and hover links


def hover_pairs(markup: str) -> set[tuple[str, str]]:
    """(hovered id, outlined id) of every ``svg:has([id=...]:hover) [id=...]`` rule in ``markup``'s <style>."""
    return set(re.findall(r'svg:has\(\[id="([^"]+)"\]:hover\) \[id="([^"]+)"\]', markup))


def test_hovering_a_grid_element_outlines_the_cell_it_reads_and_back():
    explorer = stride_explorer()
    set_layout(explorer, "4, 3", "1, 4")
    markup = explorer.picture_view.value
    assert markup.startswith("<style>") and "<script" not in markup
    pairs = hover_pairs(markup)
    truth = explorer.storage.as_strided((4, 3), (1, 4), 0)
    ids = explorer.scene.ids()
    for position in range(12):
        i, j = divmod(position, 3)
        index = truth[i, j].item() - 100  # the storage holds 100, 101, ...: its value minus 100 is its index
        element, cell, row_cell = f"elem:t:{position}", f"cell:0:storage:{index:g}", f"cell:0:t:{index:g}"
        assert {(element, cell), (cell, element), (element, row_cell), (row_cell, element)} <= pairs
        assert element in ids and cell in ids and row_cell in ids  # every linked id is drawn
    assert f".{explorer.scope} svg text{{pointer-events:none}}" in markup


def test_hovering_links_the_grid_and_the_address_table_within_one_explorer():
    explorer, other = stride_explorer(), stride_explorer()
    assert explorer.scope != other.scope and explorer.scope in explorer.widget._dom_classes
    markup = explorer.picture_view.value
    for position, *_ in explorer.addresses:
        assert f'<tr data-elem="elem:t:{position}">' in explorer.table.value
        assert f'.{explorer.scope}:has([id="elem:t:{position}"]:hover) tr[data-elem="elem:t:{position}"]' in markup
        assert f'.{explorer.scope}:has(tr[data-elem="elem:t:{position}"]:hover) [id="elem:t:{position}"]' in markup
    assert HOVER_ROW in markup and HOVER_OUTLINE in markup


def test_hover_css_checks_its_arguments():
    picture = stride_explorer().picture
    with pytest.raises(TypeError, match="picture"):
        hover_css("picture", "tl-1")
    with pytest.raises(ValueError, match="scope"):
        hover_css(picture, "bad scope{")


def test_running_past_the_end_draws_ghost_cells_where_the_tensor_runs_out():
    explorer = stride_explorer()
    set_layout(explorer, "3, 5", "4, 1", 1)
    assert explorer.tensor is None and "Out of bounds" in explorer.message.value
    ghosts = explorer.picture.row_cells("t", "ghost")
    assert [(c.index, c.positions) for c in ghosts] == [(12, (13,)), (13, (14,))]
    ids = explorer.scene.ids()
    assert ids["cell:0:t:12"].style == "ghost" and ids["elem:t:14"].style == "ghost"
    assert "past the end of the storage" in ids["ghosttext:0"].text
    assert 'id="cell:0:t:13"' in explorer.picture_view.value and "opacity:0.3" not in explorer.picture_view.value
    assert explorer.summary.endswith(
        "drawn anyway, its elements past the end as dashed ghost cells (the last would read storage index 13)"
    )
    set_layout(explorer, "3, 4", "4, 1", 0)
    assert explorer.error == "" and not explorer.picture.row_cells("t", "ghost")


def test_a_float64_storage_widens_the_byte_ruler():
    explorer = stride_explorer()
    narrow = dict(explorer.scene.texts())
    explorer.dtype.value = "float64"
    wide = dict(explorer.scene.texts())
    assert narrow["ruler:0:4"] == "4" and "ruler:0:4" not in wide and wide["ruler:0:8"] == "8"
    assert wide["ruler:0:96"] == "96" and "8 bytes per cell" in explorer.picture.notes[-1]


def test_a_copy_says_which_cells_of_x_each_element_came_from():
    explorer = view_copy_explorer()
    explorer.operation.value = "x.t().reshape(-1)"
    x = torch.arange(12.0).reshape(3, 4)
    truth = x.t().reshape(-1)  # arange: each value is the storage index it was copied from
    assert explorer.outcome.sources == tuple(int(v) for v in truth.tolist()) == (0, 4, 8, 1, 5, 9, 2, 6, 10, 3, 7, 11)
    assert explorer.summary.endswith(
        "; x.t().reshape(-1)'s elements hold the values of x's cells 0, 4, 8, 1, 5, 9, 2, 6, 10, 3, 7, 11"
    )
    drawn = dict(explorer.scene.texts())  # drawn once, in the row "from x" under the copy's storage cells
    assert [drawn[f"source:1:{k}"] for k in range(4)] == ["0", "4", "8", "1"]
    assert [drawn[f"elemtext:x.t().reshape(-1):{p}"] for p in range(4)] == ["0", "1", "2", "3"]
    assert "[1] ← 4" not in explorer.after_view.value and sources_html(explorer.outcome) in explorer.after_view.value
    pairs = hover_pairs(explorer.after_view.value)
    assert ("elem:x.t().reshape(-1):1", "cell:0:storage:4") in pairs and (
        "cell:0:x:4",
        "elem:x.t().reshape(-1):1",
    ) in pairs
    explorer.operation.value = "x.t()"  # a view reads x's cells itself: nothing copied
    assert explorer.outcome.sources is None and "←" not in explorer.after_view.value
    explorer.operation.value = "x * 2"  # computed, not copied: values x does not hold
    assert explorer.outcome.sources is None


def test_copied_from_traces_only_what_values_can_tell():
    x = torch.arange(6.0).reshape(2, 3)
    assert copied_from(x, x[[1, 0]].clone()) == (3, 4, 5, 0, 1, 2)
    assert copied_from(x.t(), x.t().flip(0)) == (2, 5, 1, 4, 0, 3)
    assert copied_from(torch.zeros(3), torch.zeros(2)) is None  # one value in several cells
    assert copied_from(x, torch.zeros(0)) is None
    with pytest.raises(TypeError, match="result"):
        copied_from(x, [1])


def test_verdict_badges_use_the_palettes_verdict_colours():
    assert VERDICT_BADGES["view"][1] == palette.VIEW and VERDICT_BADGES["copy"][1] == palette.COPY
    assert VERDICT_BADGES["in-place"][1] == palette.STALE and VERDICT_BADGES["same tensor"][1] == palette.STORAGE


@pytest.mark.parametrize(
    "offset, ghosts, says",
    [
        (
            10,
            [12],
            "drawn anyway, its elements past the end as dashed ghost cells (the last would read storage index 12)",
        ),
        (
            19,
            [19],
            "drawn anyway, with dashed ghost cells only for the elements reading the 8 cells just past the end "
            "(indices 12–19); the last would read storage index 21, 10 cells past the end",
        ),
        (
            20,
            [],
            "drawn anyway, without ghost cells: no element reads the 8 cells just past the end (indices 12–19); "
            "the last would read storage index 22, 11 cells past the end",
        ),
    ],
)
def test_the_summary_says_which_ghost_cells_are_drawn(offset, ghosts, says):
    # The picture draws ghosts only for the 8 cells just past the end; the summary used to say "its elements past
    # the end as dashed ghost cells" also for offset 20, where no ghost cell is drawn.
    explorer = stride_explorer()
    set_layout(explorer, "3", "1", offset)
    with pytest.raises(RuntimeError, match="out of bounds"):
        torch.as_strided(explorer.storage, (3,), (1,), offset)
    assert [cell.index for cell in explorer.picture.row_cells("t", "ghost")] == ghosts
    assert explorer.summary.endswith(says)


@pytest.mark.parametrize(
    "shape, stride, offset, last",
    [((2, 3), (1, 2**62), 0, 1 + 2 * 2**62), ((3,), (1,), 9223372036854775000, 9223372036854775002)],
)
def test_an_overflow_is_explained_as_torchs_storage_size_overflow(shape, stride, offset, last):
    # Every size is positive: the old explanation "Every size in the shape must be 0 or more." was false.
    explorer = stride_explorer()
    set_layout(explorer, ", ".join(map(str, shape)), ", ".join(map(str, stride)), offset)
    with pytest.raises(RuntimeError, match="Storage size calculation overflowed") as refused:
        torch.as_strided(explorer.storage, shape, stride, offset)
    assert (last + 1) * 4 > 2**63 - 1
    assert explorer.error == (
        f"Storage size calculation overflowed: the last element would read storage index {last:,}, so the storage "
        f"would need {(last + 1) * 4:,} bytes, more than torch's 64-bit integers hold (2**63 - 1 = {2**63 - 1:,})."
    )
    assert str(refused.value).split("\n")[0] in explorer.summary
    set_layout(explorer, "2, -3", "1, 1")  # a negative size: torch says "overflowed" too, and that is the reason
    assert explorer.error == "Every size in the shape must be 0 or more."


@pytest.mark.parametrize(
    "expression, returned, instead",
    [
        ("x.max(0)", "torch.return_types.max (values, indices)", "x.max(0).values"),
        ("x.split(2)", "a tuple of 2 tensors", "x.split(2)[0]"),
        ("x.numpy()", "a numpy.ndarray", None),
        ("x.storage_offset()", "the int 0", None),
    ],
)
def test_an_operation_that_returns_no_tensor_says_what_it_returned(expression, returned, instead):
    # It ran: the old message "x.max(0) cannot run on this x: it returned max, not a tensor" said it could not.
    x = torch.arange(100.0, 112.0).reshape(3, 4)
    eval(expression, {"x": x.clone()})  # torch runs it
    outcome = run_operation(x, expression)
    assert outcome.row is None and "cannot run" not in outcome.summary
    advice = f", e.g. {instead}" if instead else ""
    assert outcome.summary == (
        f"{expression} ran and returned {returned}, not a tensor: this explorer draws only tensor results{advice}"
    )
    if instead:
        assert isinstance(eval(instead, {"x": x}), torch.Tensor) and run_operation(x, instead).row is not None


def test_a_computed_result_is_said_to_hold_xs_values_not_to_be_copied_from_them():
    # x.abs() of 100..111 computes its values: "copied from x" was false; the cells holding the same values are
    # true whatever the operation did.
    outcome = run_operation(torch.arange(100.0, 112.0).reshape(3, 4), "x.abs()")
    assert outcome.row.verdict == "copy" and outcome.sources == tuple(range(12))
    text = sources_html(outcome)
    assert "copied" not in text and "the cell of x's storage holding each cell's value" in text


def test_the_address_table_says_1_byte_per_element():
    explorer = stride_explorer()
    explorer.dtype.value = "uint8"
    assert torch.empty(0, dtype=torch.uint8).element_size() == 1
    assert "· 1 byte per element" in explorer.table.value and "1 bytes" not in explorer.table.value


def tensor_fills(scene, name: str) -> set:
    """The fills of the cells a tensor called ``name`` is drawn with: its grid and its row."""
    return {
        scene.styles[item.style].fill
        for item in scene.items
        if item.id and item.style.startswith("row") and f":{name}:" in item.id
    }


@pytest.mark.parametrize("expression, verdict", [("x[1:, ::2]", "view"), ("x.t()", "view"), ("x[[0, 2]]", "copy")])
def test_the_result_is_drawn_in_a_tensor_tint_and_only_the_badge_in_the_verdict_colour(expression, verdict):
    # Issue 22: the result was always drawn in the second tint, the COPY orange's sibling, so a view was painted
    # orange under a blue VIEW badge. The badge alone carries the verdict's colour.
    explorer = view_copy_explorer()
    explorer.operation.value = expression
    assert explorer.row.verdict == verdict
    word, colour = badge(explorer.verdict.value)
    assert (word, colour) == (BADGES[verdict], palette.VERDICT_COLOURS[verdict][0])
    for name in ("x", expression):
        fills = tensor_fills(explorer.scene, name)
        assert fills and fills <= set(palette.TENSOR_TINTS), (name, fills)
        assert not [fill for fill in fills if colours.near_a_verdict(fill)], (name, fills)


def test_the_long_legend_is_in_a_collapsed_help_beside_the_picture_not_in_it():
    explorer = stride_explorer(storage_size=12)
    explorer.shape.value, explorer.stride.value = "3, 4", "0, 1"  # stride 0: cells read several times
    assert "legend" not in explorer.scene.ids()
    markup = explorer.table.value
    assert "<details><summary>How to read the picture</summary>" in markup
    for note in explorer.picture.notes:
        assert f"<li>{html.escape(note)}</li>" in markup
    assert any(note.startswith("×n (hatched)") for note in explorer.picture.notes)
