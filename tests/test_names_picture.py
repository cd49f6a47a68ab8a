"""names_snapshot and draw_names: names -> tensor objects -> storages, checked against id(), the version counter
and data pointers of the real tensors, and on the scene's contents (what is drawn, where, in which style)."""

import matplotlib

matplotlib.use("Agg")

import pytest  # noqa: E402
import torch  # noqa: E402
from matplotlib.figure import Figure  # noqa: E402

import tutorial_lib as tl  # noqa: E402
from tutorial_lib.pictures import palette  # noqa: E402
from tutorial_lib.pictures.names_picture import STYLES, names_picture, names_scene  # noqa: E402
from tutorial_lib.pictures.scene import Arrow, Rect, Text  # noqa: E402


def add_then_add_in_place():
    """Chapter 2's three moments, and the tensors as they were at each."""
    x, y = torch.ones(3), torch.ones(3)
    first_y = y
    start = tl.names_snapshot(x=x, y=y)
    y = x + y
    rebound = tl.names_snapshot(x=x, y=y)
    new_y = y
    y += x
    in_place = tl.names_snapshot(x=x, y=y)
    return (start, rebound, in_place), (x, first_y, new_y)


def test_y_equals_x_plus_y_moves_the_name_to_a_new_object_over_a_new_storage():
    (start, rebound, in_place), (x, first_y, new_y) = add_then_add_in_place()
    picture = names_picture([start, rebound, in_place], ["start", "y = x + y", "y += x"])
    before, after = picture.panels[0], picture.panels[1]
    assert dict(before.names) == {"x": 1, "y": 2} and dict(after.names) == {"x": 1, "y": 3}
    new = after.object(3)
    assert new.new and new.named and new.record.object_id == id(new_y) != id(first_y)
    assert after.storage_of(3).new and after.storage_of(3).record.data_ptr == new_y.untyped_storage().data_ptr()
    old = after.object(2)  # the object y held before: no name holds it now
    assert not old.named and not after.storage_of(2).named
    assert not after.object(1).new and not after.storage_of(1).written  # x untouched
    scene = names_scene(picture)
    items = scene.ids()
    assert items["1/tag:object:3"].text == "new" and items["1/tag:storage:3"].text == "new"
    assert items["1/object:3"].style.endswith("-new") and STYLES[items["1/object:3"].style].width > 2
    assert items["1/object:2"].style == "unnamed" and STYLES["unnamed"].dash is not None  # not colour alone
    assert items["1/tag:object:2"].text == "no name" and items["1/reads:2"].style == "faded-pointer"
    # The name y's arrow points at object 3's box in panel 1 and at object 2's in panel 0.
    for k, number in [(0, 2), (1, 3)]:
        arrow, box = items[f"{k}/pointer:y"], items[f"{k}/object:{number}"]
        assert isinstance(arrow, Arrow) and isinstance(box, Rect)
        (x0, _), (x1, y1) = arrow.points
        assert x1 <= box.x and box.y <= y1 <= box.y + box.h
    assert f"id …{id(new_y) & 0xFFFF:04x}" in items["1/objecttext:3"].text
    assert f"at …{new_y.untyped_storage().data_ptr() & 0xFFFF:04x}" in items["1/storagetext:3"].text
    assert "[2, 2, 2]" in items["1/storagetext:3"].text


def test_y_plus_equals_x_keeps_the_object_and_storage_and_writes_in_place():
    (start, rebound, in_place), (x, first_y, new_y) = add_then_add_in_place()
    picture = names_picture([start, rebound, in_place], ["start", "y = x + y", "y += x"])
    panel = picture.panels[2]
    obj, storage = panel.object(3), panel.storage_of(3)
    assert dict(panel.names)["y"] == 3 and not obj.new and obj.record.object_id == id(new_y)  # same id()
    assert obj.version_before == 0 and obj.record.version == new_y._version == 1
    assert storage.written and not storage.new and storage.record.data_ptr == new_y.untyped_storage().data_ptr()
    assert [o.number for o in panel.objects] == [1, 3]  # object 2 was shown once without a name, then dropped
    items = names_scene(picture).ids()
    assert items["2/tag:storage:3"].text == "written in place" and items["2/tag:storage:3"].style == "written-tag"
    assert STYLES["written-tag"].color == palette.STALE and STYLES[items["2/storage:3"].style].edge == palette.STALE
    assert "version 1 (was 0)" in items["2/objecttext:3"].text
    assert picture.summary.endswith(
        "y += x: x → object 1 → storage 1; y → object 3 → storage 3 (written in place); object 3: version 0 → 1"
    )


def test_views_are_new_objects_over_one_storage_so_id_says_nothing_about_memory():
    x = torch.arange(4.0)
    fig = tl.draw_names([tl.names_snapshot({"x": x, "x.detach()": x.detach(), "x.view(2, 2)": x.view(2, 2)})])
    assert isinstance(fig, Figure) and fig.scene.title == fig.summary
    panel = fig.names_picture.panels[0]
    assert [o.number for o in panel.objects] == [1, 2, 3] and len(panel.storages) == 1
    items = fig.scene.ids()
    reads = [items[f"0/reads:{n}"].points[-1] for n in (1, 2, 3)]
    storage = items["0/storage:1"]
    assert all(px <= storage.x and storage.y <= py <= storage.y + storage.h for px, py in reads)  # all to one box
    assert (
        fig.summary
        == "step 0: x → object 1 → storage 1; x.detach() → object 2 → storage 1; x.view(2, 2) → object 3 → storage 1"
    )
    sizes = [item.size or STYLES[item.style].size for item in fig.scene.items if isinstance(item, Text)]
    assert min(sizes) >= palette.MIN_TEXT_PT


def test_bad_input_is_named():
    snap = tl.names_snapshot(x=torch.ones(1))
    with pytest.raises(TypeError, match="snapshots"):
        tl.draw_names(snap)
    with pytest.raises(ValueError, match="captions"):
        tl.draw_names([snap], captions=["a", "b"])
    with pytest.raises(TypeError, match=r"snapshots\[0\]"):
        tl.draw_names([torch.ones(1)])
