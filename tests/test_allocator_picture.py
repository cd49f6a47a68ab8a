"""The allocator's own picture (issue 22, item 4): segments, their blocks and the tensors in them, drawn from the
CUDA caching allocator's snapshots recorded on an H100 (notebooks/data/h100_allocator_snapshots.json). Every width
is read back from the scene and compared with the snapshot's bytes."""

import json
from pathlib import Path

import matplotlib

matplotlib.use("Agg")

import colours  # noqa: E402
import pytest  # noqa: E402
from geometry import segment_meets_box  # noqa: E402

import tutorial_lib as tl  # noqa: E402
from tutorial_lib.pictures.allocator_picture import allocator_scene  # noqa: E402
from tutorial_lib.pictures.scene import Line, Rect, Text, text_width  # noqa: E402

SNAPSHOTS = json.loads((Path(__file__).parents[1] / "notebooks/data/h100_allocator_snapshots.json").read_text())
H100 = "recorded on an NVIDIA H100"


def test_one_tensor_is_a_segment_holding_a_block_holding_the_tensor_and_its_rounding_magnified():
    one = SNAPSHOTS["one_tensor"]
    scene = tl.draw_cuda_memory(one, source=H100).scene
    ids = scene.ids()
    segment, block = ids["alloc-seg0"], ids["alloc-seg0-block0"]
    tensor, rounding = ids["alloc-seg0-block0-tensor"], ids["alloc-seg0-block0-rounding"]
    scale = segment.w / one["reserved"]  # points per byte
    assert segment.style == "segment" and block.style == "block-active" and tensor.style == "tensor"
    assert block.w == pytest.approx(one["allocated"] * scale)  # one block fills the segment
    assert tensor.w == pytest.approx(one["nbytes"] * scale)
    assert rounding.style == "rounding" and rounding.w == pytest.approx((one["allocated"] - one["nbytes"]) * scale)
    assert tensor.x + tensor.w == pytest.approx(rounding.x)  # the tail follows the tensor
    nested = [(segment, block), (block, tensor)]
    assert all(o.y < i.y and i.y + i.h < o.y + o.h and o.x <= i.x for o, i in nested)  # one inside the other
    # the tail is under a point wide: an inset magnifies the block's end, its pieces in the same proportion
    inset_tensor, inset_rounding = ids["alloc-seg0-block0-inset-tensor"], ids["alloc-seg0-block0-inset-rounding"]
    assert rounding.w < 1 < inset_rounding.w
    texts = dict(scene.texts())
    assert texts["alloc-seg0-block0-inset-rounding-label"] == "rounding 556,032 B"
    window = float(texts["alloc-seg0-block0-inset-label"].split("last ")[1].split(" MiB")[0]) * 2**20
    assert inset_rounding.w / (inset_tensor.w + inset_rounding.w) == pytest.approx(556_032 / window, rel=0.01)
    assert inset_rounding.y > segment.y + segment.h  # under the bar it magnifies, not longer than the bar
    assert inset_tensor.w + inset_rounding.w <= segment.w
    assert scene.width * 100 / 72 < 1000  # under 1,000 px at the notebook's 100 dpi
    assert "400,556,032 B (382.00 MiB)" in scene.title and "556,032 B" in scene.title


@pytest.mark.parametrize("step", ["step_1", "step_2"])
def test_the_mlps_segments_and_blocks_are_the_snapshots_bytes(step):
    recorded = SNAPSHOTS["mlp"][step]
    scene = allocator_scene(recorded, source=H100)
    ids = scene.ids()
    allocated = reserved = 0
    for number, segment in enumerate(recorded["segments"]):
        bar = ids[f"alloc-seg{number}"]
        scale = bar.w / segment["total_size"]
        reserved += segment["total_size"]
        assert (
            dict(scene.texts())[f"alloc-seg{number}-size"] == tl.format_bytes(segment["total_size"]).split("(")[1][:-1]
        )
        x = bar.x
        for k, block in enumerate(segment["blocks"]):
            drawn = ids[f"alloc-seg{number}-block{k}"]
            assert drawn.x == pytest.approx(x) and drawn.w == pytest.approx(block["size"] * scale)
            x += drawn.w
            active = block["state"] == "active_allocated"
            assert drawn.style == ("block-active" if active else "block-free")
            if active:
                allocated += block["size"]
                tensor = ids[f"alloc-seg{number}-block{k}-tensor"]
                assert tensor.w == pytest.approx(block["requested_size"] * scale)
            else:
                assert f"alloc-seg{number}-block{k}-tensor" not in ids  # a free block holds no tensor
        assert x == pytest.approx(bar.x + bar.w)
    assert allocated == recorded["allocated_after"] and reserved == recorded["reserved"]
    headings = [t for i, t in scene.texts() if i.endswith("-heading")]
    assert headings[0].startswith("small pool: 2 MiB segments") and headings[1].startswith("large pool")
    assert scene.width * 100 / 72 < 1000


def test_every_fill_is_named_in_the_legend_in_words_a_free_block_dashed():
    scene = allocator_scene(SNAPSHOTS["mlp"]["step_2"], source=H100)
    legend = {i: t for i, t in scene.texts() if i.startswith("alloc-legend-")}
    assert legend == {
        "alloc-legend-segment": "segment (reserved)",
        "alloc-legend-block-active": "block in use (allocated)",
        "alloc-legend-tensor": "tensor's bytes",
        "alloc-legend-rounding": "rounding (block beyond the tensor)",
        "alloc-legend-block-free": "free block (cached)",
    }
    assert scene.styles["block-free"].dash and scene.styles["rounding"].hatch


def test_the_old_figures_still_draw_one_segment_and_keep_their_summary():
    from tutorial_lib.pictures.timeline import cuda_memory_summary

    fig = tl.draw_cuda_memory(400_000_000, 400_556_032, 419_430_400, 943_718_400, source="measured on cuda:0")
    assert fig.summary == cuda_memory_summary(
        400_000_000, 400_556_032, 419_430_400, 943_718_400, source="measured on cuda:0"
    )
    ids = fig.scene.ids()
    scale = ids["alloc-seg0"].w / 419_430_400
    assert ids["alloc-seg0-block0"].w == pytest.approx(400_556_032 * scale)
    assert ids["alloc-seg0-block1"].style == "block-free"
    assert ids["alloc-seg0-block1"].w == pytest.approx(18_874_368 * scale)
    assert isinstance(ids["alloc-seg0-block0-tensor"], Rect)
    assert all(isinstance(t, Text) for t in [ids["alloc-source"]])


def test_bad_snapshots_are_refused_naming_what_is_wrong():
    with pytest.raises(TypeError, match="snapshot must be an allocator snapshot"):
        allocator_scene("segments", source=H100)
    with pytest.raises(TypeError, match="segment 0 lacks a field"):
        allocator_scene({"segments": [{"blocks": []}]}, source=H100)
    bad = {"segments": [{"total_size": 4096, "segment_type": "small", "blocks": [{"size": 512, "state": "inactive"}]}]}
    with pytest.raises(ValueError, match="add up to 512 B, not 4,096"):
        allocator_scene(bad, source=H100)
    with pytest.raises(TypeError, match="source must say"):
        allocator_scene(SNAPSHOTS["one_tensor"], source="")
    with pytest.raises(TypeError, match="takes a snapshot alone"):
        tl.draw_cuda_memory(SNAPSHOTS["one_tensor"], 5, source=H100)


@pytest.mark.skipif(not __import__("torch").cuda.is_available(), reason="a live snapshot needs CUDA")
def test_a_live_snapshot_draws_what_the_allocator_counts():
    import torch

    torch.cuda.empty_cache()
    x = torch.empty(100_000_000, device="cuda")
    y = torch.empty(1000, device="cuda")
    snapshot = torch.cuda.memory._snapshot()
    scene = allocator_scene(snapshot, source=torch.cuda.get_device_name())
    ids = scene.ids()
    allocated = reserved = 0
    for number, segment in enumerate(snapshot["segments"]):
        bar = ids[f"alloc-seg{number}"]
        reserved += segment["total_size"]
        for k, block in enumerate(segment["blocks"]):
            if block["state"] == "active_allocated":
                allocated += block["size"]
                assert f"alloc-seg{number}-block{k}-tensor" in ids
        assert bar.w > 0
    assert allocated == torch.cuda.memory_allocated() and reserved == torch.cuda.memory_reserved()
    del x, y


def test_no_connector_strikes_the_insets_label():
    # Review 22: the inset's title sat on the dashed connector running from the bar down to the inset.
    scene = allocator_scene(SNAPSHOTS["one_tensor"], source=H100)
    ids = scene.ids()
    connectors = [item for item in scene.items if isinstance(item, Line) and "-connector-" in item.id]
    labels = [item for item in scene.items if isinstance(item, Text) and item.id.startswith("alloc-seg0-block0-inset-")]
    assert len(connectors) == 2 and "alloc-seg0-block0-inset-label" in ids
    for label in labels:
        width = text_width(label.text, "sans", scene.styles[label.style].size)
        left = {"start": label.x, "middle": label.x - width / 2, "end": label.x - width}[label.anchor]
        size = scene.styles[label.style].size
        top = {"bottom": label.y - size, "middle": label.y - size / 2, "top": label.y}[label.baseline]
        for connector in connectors:
            struck = segment_meets_box(connector.points, left, top, left + width, top + size)
            assert not struck, (label.id, connector.id)
    texts = dict(scene.texts())
    assert "magnified ×" in texts["alloc-seg0-block0-inset-label"] + texts.get("alloc-seg0-block0-inset-zoom", "")


def test_the_tensor_fill_is_no_verdicts_colour():
    # Review 22: the tensor fill #4477aa read as the VIEW badge's blue.
    fill = allocator_scene(SNAPSHOTS["one_tensor"], source=H100).styles["tensor"].fill
    assert not colours.near_a_verdict(fill), (fill, colours.near_a_verdict(fill))


def test_every_segment_is_on_one_byte_scale_and_a_short_one_is_magnified_beside_itself_saying_by_how_much():
    # Rereview 22: the 2 MiB small-pool segments were drawn as long as the 32 MiB large-pool ones (a scale each).
    recorded = SNAPSHOTS["mlp"]["step_2"]
    scene = allocator_scene(recorded, source=H100)
    ids, texts = scene.ids(), dict(scene.texts())
    sizes = [segment["total_size"] for segment in recorded["segments"]]
    widths = [ids[f"alloc-seg{number}"].w for number in range(len(sizes))]
    for number, (size, width) in enumerate(zip(sizes, widths)):  # drawn lengths in the ratio of their bytes
        assert width / widths[0] == pytest.approx(size / sizes[0]), number
    assert texts["alloc-scale"] == f"one byte scale: full width = {tl.format_bytes(max(sizes)).split('(')[1][:-1]}"
    assert scene.styles[ids["alloc-scale"].style].weight == "bold"
    small = [n for n, segment in enumerate(recorded["segments"]) if segment["segment_type"] == "small"]
    assert small and all(widths[n] < 0.1 * max(widths) for n in small)
    for number in range(len(sizes)):
        magnified = ids.get(f"alloc-seg{number}-magnified")
        if number not in small:
            assert magnified is None  # a 20 MiB segment is long enough to read
            continue
        label = ids[f"alloc-seg{number}-magnified-label"]
        factor = int(label.text.removeprefix("magnified ×"))
        assert factor > 1 and magnified.w == pytest.approx(widths[number] * factor)
        assert scene.styles[label.style].weight == "bold" and scene.styles[magnified.style].width < 1.2
        assert ids[f"alloc-seg{number}"].x + widths[number] < label.x < magnified.x  # the bar, its factor, the copy
        for k, block in enumerate(recorded["segments"][number]["blocks"]):  # its blocks magnified alike
            drawn = ids[f"alloc-seg{number}-magnified-block{k}"]
            assert drawn.w == pytest.approx(ids[f"alloc-seg{number}-block{k}"].w * factor)
    assert scene.width * 100 / 72 < 1000


@pytest.mark.parametrize("figures", [False, True])
def test_the_inset_draws_the_blocks_band_behind_the_tensor_as_the_bar_does(figures):
    # Rereview 22: the inset dropped the block's pale band, so the tensor sat on white there, on pale blue above.
    one = SNAPSHOTS["one_tensor"]
    if figures:  # draw_cuda_memory's old form, one allocation's figures (chapter 6's H100 cell)
        scene = tl.draw_cuda_memory(one["nbytes"], one["allocated"], one["reserved"], source="measured on cuda:0").scene
    else:
        scene = tl.draw_cuda_memory(one, source=H100).scene
    ids = scene.ids()
    band, frame, tensor = (ids[f"alloc-seg0-block0-inset{part}"] for part in ("-block", "", "-tensor"))
    rounding = ids["alloc-seg0-block0-inset-rounding"]
    assert band.style == ids["alloc-seg0-block0"].style == "block-active"
    assert (band.x, band.y, band.w, band.h) == (frame.x, frame.y, frame.w, frame.h)  # the whole window is the block
    assert scene.styles[band.style].zorder < scene.styles[tensor.style].zorder  # behind the tensor and rounding
    for piece in (tensor, rounding):
        assert band.y < piece.y and piece.y + piece.h < band.y + band.h


MiB, GiB = 2**20, 2**30


def segments(*rows):
    """A trimmed snapshot: each row (total size, pool, [(block size, requested, active)])."""
    return {
        "segments": [
            {
                "total_size": total,
                "segment_type": pool,
                "blocks": [
                    {"size": size, "requested_size": asked, "state": "active_allocated" if on else "inactive"}
                    for size, asked, on in blocks
                ],
            }
            for total, pool, blocks in rows
        ]
    }


def inset_factor(scene, ident):
    """The factor an inset says, and the ratio it is drawn at: its width over the window its connectors mark."""
    ids, texts = scene.ids(), dict(scene.texts())
    left, right = (ids[f"{ident}-connector-{side}"].points for side in ("left", "right"))
    assert left[1][0] == pytest.approx(ids[ident].x) and right[1][0] == pytest.approx(ids[ident].x + ids[ident].w)
    said = int(texts[f"{ident}-zoom"].removeprefix("magnified ×").replace(",", ""))
    return said, ids[ident].w / (right[0][0] - left[0][0])


@pytest.mark.parametrize(
    "snapshot",
    [
        segments((2 * MiB, "small", [(2 * MiB, 2 * MiB - 512, True)])),  # was "magnified ×1", drawn ×0.75
        segments((4 * MiB, "large", [(4 * MiB, 4 * MiB - 512, True)])),  # was "magnified ×2", drawn ×1.5
        SNAPSHOTS["one_tensor"],
    ],
)
def test_an_inset_really_magnifies_shows_the_rounding_and_says_the_ratio_it_is_drawn_at(snapshot):
    # Rules hunt s3, 6.1: a nearly-2 MiB block's inset was smaller than its bar, its 512 B rounding invisible in it.
    scene = allocator_scene(snapshot, source="test")
    ids = scene.ids()
    said, drawn = inset_factor(scene, "alloc-seg0-block0-inset")
    assert said > 1 and drawn == pytest.approx(said, rel=1e-6)
    rounding = ids["alloc-seg0-block0-inset-rounding"]
    assert rounding.w >= 3 and rounding.w == pytest.approx(ids["alloc-seg0-block0-rounding"].w * said)
    tensor, frame = ids["alloc-seg0-block0-inset-tensor"], ids["alloc-seg0-block0-inset"]
    assert tensor.w + rounding.w == pytest.approx(frame.w) and frame.x + frame.w <= ids["alloc-seg0"].x + 440 + 1e-9


def test_an_inset_under_a_magnified_segment_says_its_factor_against_the_bar_its_lines_come_from():
    # Rules hunt s3, 6.2: the 100 MiB segment's inset hung from its ×5 copy but said ×192, true of the true-size bar.
    snapshot = segments(
        (2 * MiB, "small", [(MiB, MiB, True), (MiB, MiB, False)]),
        (100 * MiB, "large", [(100 * MiB, 99 * MiB, True)]),
        (GiB, "large", [(GiB, GiB, True)]),
    )
    scene = allocator_scene(snapshot, source="test")
    ids = scene.ids()
    assert "alloc-seg1-magnified" in ids
    said, drawn = inset_factor(scene, "alloc-seg1-block0-inset")
    assert drawn == pytest.approx(said, rel=1e-6)
    bar = ids["alloc-seg1"]  # its lines come from the true-size bar, whose scale is the picture's byte scale
    start = ids["alloc-seg1-block0-inset-connector-left"].points[0][0]
    assert bar.x <= start <= bar.x + bar.w


def test_an_empty_snapshot_says_it_has_no_segments_and_a_zero_byte_one_is_not_magnified():
    # Rules hunt s3, 6.4: "one byte scale: full width = 1 B" over no bars, a summary "test: , reserved 0 B; …", and
    # a 0 B segment "magnified ×500000".
    scene = allocator_scene({"segments": []}, source="test")
    texts = [text for _, text in scene.texts()]
    assert not any("full width" in text or "×" in text for text in texts)
    assert "no segments: the allocator has reserved nothing" in texts
    assert scene.title.startswith("test: no segments") and ": ," not in scene.title
    scene = allocator_scene(segments((0, "large", []), (2 * MiB, "small", [(2 * MiB, MiB, True)])), source="test")
    assert not any("magnified" in text for _, text in scene.texts())
    scene = allocator_scene(segments((0, "large", [])), source="test")
    assert not any("magnified" in text or "full width = 1 B" in text for _, text in scene.texts())


def test_a_magnified_copys_label_ends_before_the_copy_whatever_its_factor():
    # Rules hunt s3, 6.4: room was kept for "magnified ×1000" only; "magnified ×100000" ran into the copy.
    scene = allocator_scene(
        segments((128, "small", [(128, 100, True)]), (32 * MiB, "large", [(32 * MiB, 30 * MiB, True)])), source="t"
    )
    ids = scene.ids()
    label, copy = ids["alloc-seg0-magnified-label"], ids["alloc-seg0-magnified"]
    factor = int(label.text.removeprefix("magnified ×").replace(",", ""))
    assert factor > 1000 and copy.w == pytest.approx(ids["alloc-seg0"].w * factor)
    assert label.x + text_width(label.text, "sans", scene.styles[label.style].size, "bold") < copy.x


def test_each_short_segment_is_magnified_by_its_own_factor_until_its_blocks_read():
    # Rules hunt s3, 6.3: one factor for all short segments (×5, set by the 100 MiB one) left the 2 MiB segment's
    # copy 4.3 pt long, its 1 MiB blocks 2.1 pt each, and nothing said so.
    snapshot = segments(
        (2 * MiB, "small", [(MiB, MiB, True), (MiB, MiB, False)]),
        (100 * MiB, "large", [(100 * MiB, 99 * MiB, True)]),
        (GiB, "large", [(GiB, GiB, True)]),
    )
    scene = allocator_scene(snapshot, source="test")
    ids, texts = scene.ids(), dict(scene.texts())
    factors = {}
    for number in (0, 1):
        label, copy = ids[f"alloc-seg{number}-magnified-label"], ids[f"alloc-seg{number}-magnified"]
        factors[number] = int(label.text.removeprefix("magnified ×").replace(",", ""))
        assert copy.w == pytest.approx(ids[f"alloc-seg{number}"].w * factors[number])  # the factor said is drawn
        assert label.x + text_width(label.text, "sans", scene.styles[label.style].size, "bold") < copy.x
        assert "still too small" not in texts[f"alloc-seg{number}-note"]
    assert factors[0] > factors[1]
    for k in (0, 1):  # the 2 MiB segment's 1 MiB blocks read in its copy
        assert ids[f"alloc-seg0-magnified-block{k}"].w >= 20
    assert ids["alloc-seg0-magnified"].x == ids["alloc-seg1-magnified"].x  # the copies in one column


def test_a_copy_still_too_short_at_the_largest_factor_says_so_on_its_row():
    scene = allocator_scene(
        segments((64, "small", [(64, 60, True)]), (32 * GiB, "large", [(32 * GiB, 32 * GiB, True)])), source="t"
    )
    ids, texts = scene.ids(), dict(scene.texts())
    assert ids["alloc-seg0-magnified"].w < 40
    assert texts["alloc-seg0-note"].startswith("still too small to read; ")


def test_a_zero_byte_block_is_counted_apart_as_not_drawn():
    # Rules hunt s3, 6.5: a 0 B block was drawn 0 pt wide yet counted in "2 active blocks".
    scene = allocator_scene(
        segments(
            (2 * MiB, "small", [(MiB, MiB - 512, True), (0, 0, True), (MiB, MiB, True)]),
            (32 * MiB, "large", [(32 * MiB, 30 * MiB, True)]),
        ),
        source="t",
    )
    ids, texts = scene.ids(), dict(scene.texts())
    assert not any(ident.startswith("alloc-seg0-block1") for ident in ids)  # nothing 0 pt wide drawn
    assert texts["alloc-seg0-note"] == "2 active blocks; 1 block of 0 B, not drawn"
    assert "4 active blocks (1 of 0 B, not drawn)" in scene.title
    widths = [item.w for item in scene.items if isinstance(item, Rect)]
    assert min(widths) > 0
