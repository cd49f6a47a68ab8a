"""Chapter 7's places picture: each storage is a box in the column of the place torch says it lives in, with the
tensors on it and its size; a file shows its storage records; arrows join the boxes the caller names."""

import io

import matplotlib

matplotlib.use("Agg")

import matplotlib.pyplot as plt  # noqa: E402
import pytest  # noqa: E402
import torch  # noqa: E402

import tutorial_lib as tl  # noqa: E402
from tutorial_lib.pictures import palette  # noqa: E402
from tutorial_lib.pictures.render_svg import svg  # noqa: E402
from tutorial_lib.pictures.scene import Arrow, Text, size_of  # noqa: E402


def column_of(scene, key):
    ids = scene.ids()
    box = ids[f"box:{key}"]
    columns = [
        k[len("column:") :]
        for k, item in ids.items()
        if k.startswith("column:") and item.x <= box.x and box.x + box.w <= item.x + item.w
    ]
    assert len(columns) == 1, (key, columns)
    return columns[0]


def shared_message():
    message = torch.arange(4.0)
    before = tl.storage_places({"message": message})
    message.share_memory_()
    return message, before


def test_a_shared_tensor_is_drawn_in_shared_memory_where_it_was_dashed_and_the_other_process_maps_it():
    message, before = shared_message()
    fig = tl.draw_places(
        {"message": message},
        before=before,
        elsewhere={"the child's tensor": "message"},
        moves=[("before:message", "message", "put()"), ("the child's tensor", "message", "mul_(2)", "write")],
    )
    scene = fig.scene
    assert column_of(scene, "before:message") == "this process's memory"
    assert column_of(scene, "message") == "shared memory"
    assert column_of(scene, "the child's tensor") == "the other process"
    ids = scene.ids()
    # left to right: where it was, shared memory, the other process
    assert ids["box:before:message"].x < ids["box:message"].x < ids["box:the child's tensor"].x
    assert scene.styles[ids["box:before:message"].style].dash is not None  # gone now: dashed
    assert scene.styles[ids["box:message"].style].fill == palette.STORAGE
    texts = dict(scene.texts())
    assert texts["text:message:1"] == "storage: 16 B" and texts["text:before:message:0"] == "message (before)"
    # the arrows start at one box and end at the other, and say what the code did
    arrow = ids["move:0"]
    assert isinstance(arrow, Arrow) and texts["movetext:0"] == "put()"
    assert arrow.points[0][0] == pytest.approx(ids["box:before:message"].x + ids["box:before:message"].w)
    assert arrow.points[-1][0] == pytest.approx(ids["box:message"].x)
    assert arrow.points[0][1] == arrow.points[-1][1]  # boxes side by side: a level arrow
    assert fig.summary.startswith("this process's memory: message before (16 B) | shared memory: message (16 B)")
    assert fig.summary.endswith(
        "| message (before) -> message by put(): copies or moves the bytes"
        " | the child's tensor -> message by mul_(2): writes into memory already there (in place)"
    )


def test_a_file_shows_its_records_and_what_was_loaded_together_shares_one_new_box():
    base = torch.arange(10.0, 16.0)
    buffer = io.BytesIO()
    torch.save({"base": base, "window": base[2:5]}, buffer)
    buffer.seek(0)
    loaded = torch.load(buffer)
    fig = tl.draw_places(
        {"base": base, "loaded base": loaded["base"], "loaded window": loaded["window"]},
        files={"pair.pt": buffer},
        moves=[("base", "pair.pt", "torch.save"), ("pair.pt", "loaded base", "torch.load")],
        absent={"cuda": "not run here: no GPU"},
    )
    scene = fig.scene
    texts = dict(scene.texts())
    assert column_of(scene, "pair.pt") == "file on disk"
    assert texts["text:pair.pt:2"] == "record data/0: 24 B"  # one storage, saved whole
    assert texts["text:loaded base:1"] == "loaded window"  # one box: the pair came back on one storage
    assert "box:loaded window" not in scene.ids()
    assert texts["absent:cuda"] == "not run here: no GPU"
    assert scene.styles[scene.ids()["column:cuda"].style].dash is not None  # drawn empty, never invented
    assert "cuda: not run here: no GPU" in fig.summary


def test_a_copy_in_the_same_place_gets_its_own_box_and_the_arrow_goes_round_beside_the_column():
    integers = torch.tensor([1, 2, 3, 6])
    floats = torch.tensor([1.0, 2.0])
    fig = tl.draw_places(
        {"floats": floats, "same": floats.to(torch.float32), "integers": integers, "copy": integers.to(torch.float32)},
        moves=[("integers", "copy", ".to(torch.float32)")],
    )
    scene = fig.scene
    ids, texts = scene.ids(), dict(scene.texts())
    assert texts["text:floats:1"] == "same" and "box:same" not in ids  # .to() returned floats: its storage
    assert column_of(scene, "copy") == column_of(scene, "integers") == "this process's memory"
    assert texts["text:copy:1"] == "storage: 16 B" and texts["text:integers:1"] == "storage: 32 B"
    arrow, right = ids["move:0"], ids["box:integers"].x + ids["box:integers"].w
    assert len(arrow.points) == 4 and arrow.points[1][0] > right and ids["movetext:0"].x > right
    assert ids["movetext:0"].x + 40 < scene.width  # the words fit in the picture


def test_a_move_to_another_device_lands_in_that_devices_column():
    # meta stands in for a GPU here (no CUDA on the test machine): a device column of its own, after own memory
    floats = torch.tensor([1.0, 2.0])
    moved = floats.to("meta")
    fig = tl.draw_places({"floats": floats, "moved": moved}, moves=[("floats", "moved", '.to("meta")')])
    scene = fig.scene
    assert column_of(scene, "floats") == "this process's memory" and column_of(scene, "moved") == "meta: no memory"
    ids = scene.ids()
    assert ids["box:floats"].x < ids["box:moved"].x and "absent:cuda" not in ids
    assert 'floats -> moved by .to("meta")' in fig.summary and "moved (no memory)" in fig.summary
    assert dict(scene.texts())["text:moved:1"] == "no memory: shape and dtype only"


def test_text_is_readable_and_both_renderers_draw_it():
    message, before = shared_message()
    scene = tl.draw_places({"message": message}, before=before, moves=[("before:message", "message", "put()")]).scene
    assert min(size_of(item, scene.styles) for item in scene.items if isinstance(item, Text)) >= palette.MIN_TEXT_PT
    assert 'id="box:message"' in svg(scene)


@pytest.mark.parametrize(
    ("kwargs", "error", "named"),
    [
        ({"moves": [("x", "nowhere", "to")]}, ValueError, "nowhere"),
        ({"moves": [("x", "x")]}, TypeError, "moves"),
        ({"moves": [("x", "x", "x.add_(1)", "inplace")]}, ValueError, r"moves\[0\]'s kind must be one of"),
        ({"moves": [("x", "x", "x.add_(1)", 2)]}, TypeError, "moves"),
        ({"moves": [("x", "x", "f(x)", "map")]}, ValueError, r"moves\[0\] says 'map'"),
        ({"elsewhere": {"child": "x"}}, ValueError, "shared memory"),
        ({"before": [3]}, TypeError, "before"),
        ({"files": ["a"]}, TypeError, "files"),
        ({"absent": {"cuda": 1}}, TypeError, "absent"),
        ({"ax": 1}, TypeError, "ax"),
    ],
)
def test_bad_arguments_are_refused_by_name(kwargs, error, named):
    with pytest.raises(error, match=named):
        tl.draw_places({"x": torch.zeros(2)}, **kwargs)


@pytest.mark.skipif(not torch.cuda.is_available(), reason="a real GPU move needs CUDA")
def test_a_real_gpu_move_lands_in_the_gpus_column_and_comes_back_as_a_new_storage():
    floats = torch.tensor([1.0, 2.0])
    on_gpu = floats.to("cuda")
    back = on_gpu.cpu()
    fig = tl.draw_places(
        {"floats": floats, "on_gpu": on_gpu, "back": back},
        moves=[("floats", "on_gpu", '.to("cuda")'), ("on_gpu", "back", ".cpu()")],
    )
    scene = fig.scene
    gpu_column = column_of(scene, "on_gpu")
    assert gpu_column.startswith("cuda") and gpu_column != column_of(scene, "floats")
    assert column_of(scene, "back") == column_of(scene, "floats") == "this process's memory"
    assert "box:back" in scene.ids() and "box:floats" in scene.ids()  # .cpu() made a storage of its own
    assert dict(scene.texts())["text:on_gpu:1"] == "storage: 8 B"


def test_mmap_is_a_dashed_arrow_that_says_it_maps_and_torch_load_a_solid_copy(tmp_path):
    # Review 22: torch.load(path) and torch.load(path, mmap=True) got the same arrow, so the mapped weight looked
    # like a copy. Which storage is the file's own pages is read from the operating system (/proc/self/maps).
    path = tmp_path / "linear.pt"
    torch.save({"weight": torch.arange(1024.0)}, path)
    read, mapped = torch.load(path), torch.load(path, mmap=True)
    tensors = {"read": read["weight"], "mapped": mapped["weight"]}
    places = {place.names[0]: place for place in tl.storage_places(tensors)}
    if places["mapped"].mapped_file is None:
        pytest.skip("no /proc/self/maps here: a mapped file cannot be told from own memory")
    fig = tl.draw_places(
        tensors,
        files={"linear.pt": path},
        moves=[("linear.pt", "read", "torch.load(path)"), ("linear.pt", "mapped", "mmap=True")],
    )
    scene, texts = fig.scene, dict(fig.scene.texts())
    copy, mapping = (scene.styles[scene.ids()[f"move:{k}"].style] for k in (0, 1))
    assert copy.dash is None and mapping.dash is not None  # solid copy, dashed map
    assert texts["movetext:0"] == "torch.load(path)"
    assert "maps, no copy" in texts["movetext:1"] and "maps" not in texts["movetext:0"]
    assert fig.summary.endswith("linear.pt -> mapped by mmap=True: maps the file's pages, no copy")
    plt.close(fig)
    # said explicitly, the kind must agree with what /proc/self/maps says
    said = tl.draw_places(tensors, files={"linear.pt": path}, moves=[("linear.pt", "mapped", "mmap=True", "map")])
    assert said.scene.ids()["move:0"].style == "map"
    plt.close(said)
    with pytest.raises(ValueError, match=r"moves\[0\] says 'copy', but 'mapped' is that file's own pages"):
        tl.draw_places(tensors, files={"linear.pt": path}, moves=[("linear.pt", "mapped", "mmap=True", "copy")])
    del read, mapped, tensors


def test_a_write_has_its_own_line_style_and_legend_entry_apart_from_a_copy_and_a_map():
    # Rereview 22: the child's mul_(2) into the shared storage was drawn as the same solid arrow as put()'s move.
    message, before = shared_message()
    scene = tl.draw_places(
        {"message": message},
        before=before,
        elsewhere={"the child's tensor": "message"},
        moves=[
            ("before:message", "message", "inbox.put(message)"),
            ("the child's tensor", "message", "mul_(2)", "write"),
        ],
    ).scene
    ids, texts = scene.ids(), dict(scene.texts())
    move, write = (scene.styles[ids[f"move:{k}"].style] for k in (0, 1))
    assert move.dash is None and write.dash is not None and write.dash != scene.styles["map"].dash
    assert write.width > move.width  # dotted and thicker: never told apart by colour alone
    assert texts["movetext:1"] == "mul_(2)"
    # the legend: a sample of each line drawn, in the arrows' own style, and its meaning in words
    assert ids["legend:move"].style == ids["move:0"].style and ids["legend:write"].style == ids["move:1"].style
    assert texts["legendtext:move"] == "copies or moves the bytes"
    assert texts["legendtext:write"] == "writes into memory already there (in place)"
    assert "legend:map" not in ids  # only the kinds drawn
    legend_top = min(ids[k].y for k in texts if k.startswith("legendtext:"))
    assert legend_top > max(item.y + item.h for key, item in ids.items() if key.startswith("column:"))


def test_a_write_said_by_the_caller_is_dotted_share_memory_is_a_move_and_one_kind_needs_no_legend():
    a, b = torch.zeros(3), torch.ones(3)
    scene = tl.draw_places({"a": a, "b": b}, moves=[("b", "a", "a.copy_(b)", "write")]).scene
    assert scene.ids()["move:0"].style == "write"
    assert "legend:write" not in scene.ids()  # one kind of arrow: nothing to tell apart
    before = tl.storage_places({"a": a})
    a.share_memory_()
    scene = tl.draw_places({"a": a}, before=before, moves=[("before:a", "a", "a.share_memory_()")]).scene
    assert scene.ids()["move:0"].style == "move"


def test_an_arrows_kind_is_what_the_caller_says_never_guessed_from_its_code():
    # Rules hunt s3, 5: the kind was a regex on the code text, wrong both ways: y[0].add_(1) and z += y drawn as
    # copies, z.requires_grad_() and my_func_(x) (no bytes written) as writes. The code is a label, not evidence.
    x, y, z = torch.zeros(3), torch.ones(3), torch.ones(3)
    fig = tl.draw_places(
        {"x": x, "y": y, "z": z},
        moves=[
            ("x", "y", "y[0].add_(1)", "write"),
            ("x", "z", "z.requires_grad_()"),
            ("y", "z", "z += y", "write"),
            ("y", "x", "my_func_(x)"),
            ("z", "x", "x.copy_(z)", "copy"),
        ],
    )
    styles = [fig.scene.ids()[f"move:{k}"].style for k in range(5)]
    assert styles == ["write", "move", "write", "move", "move"]
    texts = dict(fig.scene.texts())
    assert [texts[f"movetext:{k}"] for k in range(5)] == [
        "y[0].add_(1)",
        "z.requires_grad_()",
        "z += y",
        "my_func_(x)",
        "x.copy_(z)",
    ]
    # the text says each arrow's kind in the legend's words, as the picture draws it
    assert texts["legendtext:write"] == "writes into memory already there (in place)"
    assert fig.summary.endswith(
        " | x -> y by y[0].add_(1): writes into memory already there (in place)"
        " | x -> z by z.requires_grad_(): copies or moves the bytes"
        " | y -> z by z += y: writes into memory already there (in place)"
        " | y -> x by my_func_(x): copies or moves the bytes"
        " | z -> x by x.copy_(z): copies or moves the bytes"
    )
    plt.close(fig)


def test_an_arrow_from_the_other_process_is_a_copy_unless_the_caller_says_it_writes():
    message, before = shared_message()
    moves = [("before:message", "message", "put()"), ("the child's tensor", "message", "print(message)  # reads")]
    fig = tl.draw_places({"message": message}, before=before, elsewhere={"the child's tensor": "message"}, moves=moves)
    assert [fig.scene.ids()[f"move:{k}"].style for k in (0, 1)] == ["move", "move"]
    assert "legend:move" not in fig.scene.ids()  # one kind drawn
    assert fig.summary.endswith("the child's tensor -> message by print(message)  # reads: copies or moves the bytes")
    plt.close(fig)
