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
    assert compare([picture], []) == ["1 pictures before, 0 after"]
    (moved,) = compare([picture], [{**picture, "cell": 6}])
    assert "now notebook 01 cell 6" in moved


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
