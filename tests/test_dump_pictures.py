"""`.ci/dump_pictures.py`: every picture the notebooks draw as text, and the comparison of two such dumps."""

import json
import subprocess
import sys
from pathlib import Path

from scripts import load_script

ROOT = Path(__file__).resolve().parents[1]


def load_module():
    return load_script(Path(".ci/dump_pictures.py"))


def test_chapter_0_dump_holds_each_kind_of_picture_with_its_summary_and_texts():
    # In a child process: running a notebook leaves state behind (seeds, the last watch_inplace block).
    (notebook,) = sorted((ROOT / "notebooks").glob("00_*.ipynb"))
    script = ROOT / ".ci" / "dump_pictures.py"
    result = subprocess.run([sys.executable, str(script), str(notebook)], capture_output=True, text=True, check=True)
    records = json.loads(result.stdout)
    kinds = {record["kind"] for record in records}
    assert {"layout", "graph", "error", "timeline"} <= kinds
    for record in records:
        assert record["nb"] == "00" and record["summary"]
        if record["kind"] in ("layout", "graph", "timeline"):
            assert record["texts"], record  # the scene's texts, not an empty list
    layout = next(record for record in records if record["kind"] == "layout")
    assert ["strip:0", layout["summary"].split(";")[0]] in layout["texts"]  # the strip's title is its first part


def test_compare_names_each_difference_and_nothing_when_equal():
    compare = load_module().compare
    picture = {"nb": "01", "cell": 5, "kind": "layout", "summary": "storage of 12", "texts": [["legend", "a"]]}
    assert compare([picture], [dict(picture)]) == []
    (changed,) = compare([picture], [{**picture, "texts": [["legend", "b"]]}])
    assert "notebook 01 cell 5 (layout): texts differ" in changed and "['legend', 'b']" in changed
    (summary,) = compare([picture], [{**picture, "summary": "storage of 13"}])
    assert "summary 'storage of 12' became 'storage of 13'" in summary
    assert compare([picture], []) == ["1 pictures before, 0 after", "gone: notebook 01 cell 5 (layout): storage of 12"]
    (moved,) = compare([picture], [{**picture, "cell": 6}])
    assert "now notebook 01 cell 6" in moved


def test_compare_names_a_new_picture_and_still_compares_the_ones_after_it_one_to_one():
    compare = load_module().compare
    first = {"nb": "02", "cell": 3, "kind": "layout", "summary": "storage of 6", "texts": [["legend", "a"]]}
    last = {"nb": "04", "cell": 5, "kind": "graph", "summary": "graph of y", "texts": [["node:1", "MulBackward0"]]}
    names = {"nb": "02", "cell": 28, "kind": "names", "summary": "x -> object 1", "texts": [["0/name:x", "x"]]}
    assert compare([first, last], [first, names, last]) == [
        "2 pictures before, 3 after",
        "new: notebook 02 cell 28 (names): x -> object 1",
    ]
    (changed,) = compare([first, last], [first, names, {**last, "summary": "graph of z"}])[2:]
    assert changed == "notebook 04 cell 5 (graph): summary 'graph of y' became 'graph of z'"


def test_geometry_digest_sees_a_moved_item_but_not_float_noise():
    module = load_module()
    from tutorial_lib.pictures.scene import Rect, Scene, Style, Text

    def scene(x: float) -> Scene:
        items = (Rect(x, 0.0, 10.0, 10.0, "box", "cell:0"), Text(1.0, 1.0, "a", "label", "legend"))
        return Scene(40.0, 20.0, items, {"box": Style(fill="#eeeeee"), "label": Style()}, "one cell")

    base = module._geometry(scene(2.0))
    assert module._geometry(scene(2.0 + 1e-9)) == base  # the same picture, arithmetic done in another order
    assert module._geometry(scene(2.5)) != base  # a rectangle moved half a point
    restyled = Scene(40.0, 20.0, scene(2.0).items, {"box": Style(fill="#ffffff"), "label": Style()}, "one cell")
    assert module._geometry(restyled) != base
    picture = {"nb": "01", "cell": 5, "kind": "layout", "summary": "s", "texts": [], "geometry": base}
    (moved,) = module.compare([picture], [{**picture, "geometry": module._geometry(scene(2.5))}])
    assert "same texts, but a place, size, style or id differs" in moved


def test_every_picture_function_a_notebook_calls_is_recorded_with_its_kind(tmp_path):
    # A notebook-like snippet calling the picture functions the first version of the dump did not wrap, and a
    # GraphStepper moved from code: each picture is recorded, the stepper at each state it moves to.
    import nbformat

    cells = [
        "import torch\nimport tutorial_lib as tl",
        "display('notebooks call display without importing it')\n"
        "x = torch.ones(3, requires_grad=True)\n"
        "fig = tl.draw_sharing(x, {'x.clone()': lambda t: t.clone(), 'x.detach()': lambda t: t.detach()})",
        "a = torch.arange(4.0)\nb = a[1:]\nfig = tl.draw_names([tl.names_snapshot(a=a, b=b)], captions=['b = a[1:]'])",
        "fig = tl.draw_places({'a': a, 'b': b})",
        "tl.graph_svg(x * 2)",  # a string, not a scene: nothing recorded
        "stepper = tl.GraphStepper([('leaf', 'y = torch.ones(2, requires_grad=True)'), ('double', 'z = y * 2')])\n"
        "while stepper.step_forward():\n    pass",
    ]
    notebook = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell(source) for source in cells])
    path = tmp_path / "42_pictures.ipynb"
    nbformat.write(notebook, path)
    script = ROOT / ".ci" / "dump_pictures.py"
    result = subprocess.run([sys.executable, str(script), str(path)], capture_output=True, text=True, check=True)
    records = json.loads(result.stdout)
    by_cell = [(record["cell"], record["kind"]) for record in records]
    assert by_cell == [
        (1, "sharing"),
        (2, "names"),
        (3, "places"),
        (5, "GraphStepper step"),
        (5, "GraphStepper step"),
        (5, "GraphStepper"),
    ]
    for record in records:
        assert record["nb"] == "42" and record["summary"] and record["texts"] and record["geometry"], record
    sharing = records[0]
    assert any(text == "x.detach()" for _, text in sharing["texts"]), sharing["texts"]
    first, second, last = records[3:]
    assert first["summary"] != second["summary"] == last["summary"]  # step 1, then step 2, where the cell left it


def test_addresses_are_numbered_so_two_runs_compare_same_and_two_addresses_stay_apart():
    module = load_module()
    from tutorial_lib.pictures.scene import Scene, Style, Text

    def scene(first: str, second: str) -> Scene:
        items = (
            Text(0.0, 0.0, f"id …{first} · version 0", "label", "a"),
            Text(0.0, 9.0, f"at …{second}", "label", "b"),
        )
        return Scene(40.0, 20.0, items, {"label": Style()}, "two objects")

    run_1 = module.picture_record({"nb": "02", "cell": 1}, "names", "a at 0x32a0", scene("32a0", "39d0"))
    run_2 = module.picture_record({"nb": "02", "cell": 1}, "names", "a at 0x80f0", scene("80f0", "8550"))
    assert run_1 == run_2
    assert run_1["texts"] == [["a", "id <address 1> · version 0"], ["b", "at <address 2>"]]
    assert run_1["summary"] == "a at <address 3>"
    one_storage = module.picture_record({"nb": "02", "cell": 1}, "names", "a at 0x32a0", scene("32a0", "32a0"))
    assert one_storage["texts"][1] == ["b", "at <address 1>"] and one_storage["geometry"] != run_1["geometry"]
    assert module.Addresses()("0, 1, …, 11 and …face") == "0, 1, …, 11 and …face"  # elisions stay


def test_each_notebook_is_dumped_in_a_process_of_its_own(tmp_path):
    # The first notebook leaves grad mode off (a deep dive's state could leak like this): the second one's graph must
    # be drawn as when it is dumped alone.
    import nbformat

    def notebook(name: str, *cells: str) -> Path:
        path = tmp_path / name
        nbformat.write(nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell(c) for c in cells]), path)
        return path

    leaky = notebook("40_leaky.ipynb", "import torch\ntorch.set_grad_enabled(False)")
    graph = notebook(
        "41_graph.ipynb",
        "import torch\nimport tutorial_lib as tl\nx = torch.ones(2, requires_grad=True)\nfig = tl.draw_graph(x * 2)",
    )
    script = ROOT / ".ci" / "dump_pictures.py"

    def dumped(*paths: Path) -> list[dict]:
        result = subprocess.run([sys.executable, str(script), *map(str, paths)], capture_output=True, text=True)
        assert result.returncode == 0, result.stderr
        return json.loads(result.stdout)

    (alone,) = dumped(graph)
    (after_leaky,) = dumped(leaky, graph)
    assert after_leaky == alone and "MulBackward0" in str(alone["texts"])


def test_kinds_keep_their_first_names_and_counts_add_up_per_notebook():
    module = load_module()
    assert [module.kind_of(name) for name in ("draw_layout", "show_error", "draw_memory_timeline")] == [
        "layout",
        "error",
        "timeline",
    ]
    assert module.kind_of("draw_allocator_snapshot") == "allocator_snapshot"
    records = [{"nb": "04", "kind": "graph"}, {"nb": "04", "kind": "sharing"}, {"nb": "04", "kind": "graph"}]
    assert module.counts(records) == {"04": {"graph": 2, "sharing": 1}}
