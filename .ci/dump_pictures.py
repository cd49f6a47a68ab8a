"""Every picture the notebooks draw, as text, so two versions of the library can be compared picture by picture.

For maintainers changing how pictures are built (not what they show): run it before and after, then compare.

    .venv/bin/python .ci/dump_pictures.py > /tmp/before.json          # on the old code
    .venv/bin/python .ci/dump_pictures.py > /tmp/after.json           # on the new code
    .venv/bin/python .ci/dump_pictures.py --compare /tmp/before.json /tmp/after.json

It runs the code cells of notebooks 00-06 in this process (chapter 7 starts processes and is left out) with
``tl.draw_layout``, ``tl.draw_graph``, ``tl.show_error`` and ``tl.draw_memory_timeline`` wrapped, and records for
each picture its text summary, the (id, text) of every text its scene draws and a digest of the whole scene
(every item's place, size, style and id, and the style sheet, floats rounded to 3 decimals); the live explorers
are recorded after each cell. The comparison prints what differs and exits 1 when anything does.
"""

from __future__ import annotations

import argparse
import contextlib
import dataclasses
import hashlib
import io
import json
import os
import sys
import warnings
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def _texts(scene) -> list[list[str]]:
    return sorted([ident, text] for ident, text in scene.texts()) if scene is not None else []


def _rounded(value):
    """``value`` with every float rounded to 3 decimals (a refactoring may reorder arithmetic), tuples as lists."""
    if isinstance(value, float):
        return round(value, 3) + 0.0  # + 0.0: -0.0 and 0.0 print alike
    if isinstance(value, (list, tuple)):
        return [_rounded(v) for v in value]
    if isinstance(value, dict):
        return {str(k): _rounded(v) for k, v in sorted(value.items())}
    if dataclasses.is_dataclass(value):
        return [type(value).__name__, *(_rounded(getattr(value, f.name)) for f in dataclasses.fields(value))]
    return value


def _geometry(scene) -> str:
    """A digest of everything the scene draws: size, every item (kind, place, style, id, text) and its styles."""
    if scene is None:
        return ""
    whole = [scene.width, scene.height, scene.title, scene.items, scene.styles]
    return hashlib.sha256(json.dumps(_rounded(whole), ensure_ascii=False).encode()).hexdigest()[:16]


def dump(notebooks: list[Path]) -> list[dict]:
    """Run ``notebooks`` in this process and return one record per picture drawn."""
    import matplotlib

    matplotlib.use("Agg")
    import nbformat

    import tutorial_lib as tl
    from tutorial_lib.explorers.graph_stepper import GraphStepper
    from tutorial_lib.explorers.layout_explorers import StrideExplorer, ViewCopyExplorer

    records: list[dict] = []
    where = {"nb": "", "cell": 0}

    def record(kind: str, summary: str, scene) -> None:
        records.append(
            {**where, "kind": kind, "summary": summary, "texts": _texts(scene), "geometry": _geometry(scene)}
        )

    originals = {
        name: getattr(tl, name) for name in ("draw_layout", "draw_graph", "show_error", "draw_memory_timeline")
    }

    def wrapped(name: str, kind: str):
        def draw(*args, **kwargs):
            result = originals[name](*args, **kwargs)
            figure = getattr(result, "figure", result)  # show_error returns a report holding its figure
            record(kind, result.summary, getattr(figure, "scene", None))
            return result

        return draw

    kinds = {"draw_layout": "layout", "draw_graph": "graph", "show_error": "error", "draw_memory_timeline": "timeline"}
    for name, kind in kinds.items():
        setattr(tl, name, wrapped(name, kind))
    try:
        for path in notebooks:
            notebook = nbformat.read(path, as_version=4)
            namespace = {"__name__": "__main__"}
            os.chdir(path.parent)
            where["nb"] = path.name[:2]
            for index, cell in enumerate(notebook.cells):
                if cell.cell_type != "code" or cell.source.lstrip().startswith("%%"):
                    continue
                where["cell"] = index
                lines = cell.source.splitlines()
                source = "\n".join(line for line in lines if not line.lstrip().startswith(("%", "!")))
                with contextlib.redirect_stdout(io.StringIO()), warnings.catch_warnings():
                    warnings.simplefilter("ignore")
                    try:
                        exec(compile(source, f"{path.name}[{index}]", "exec"), namespace)  # noqa: S102
                    except Exception:  # noqa: BLE001, S110 - cells tagged raises-exception raise on purpose
                        pass
                for value in list(namespace.values()):
                    if isinstance(value, (GraphStepper, StrideExplorer, ViewCopyExplorer)):
                        record(type(value).__name__, value.summary, value.scene)
    finally:
        os.chdir(ROOT)
        for name, original in originals.items():
            setattr(tl, name, original)
    return records


def compare(before: list[dict], after: list[dict]) -> list[str]:
    """What differs between two dumps, one line per picture (an empty list when they are the same)."""
    problems = []
    if len(before) != len(after):
        problems.append(f"{len(before)} pictures before, {len(after)} after")
    for old, new in zip(before, after):
        where = f"notebook {old['nb']} cell {old['cell']} ({old['kind']})"
        if (old["nb"], old["cell"], old["kind"]) != (new["nb"], new["cell"], new["kind"]):
            problems.append(f"{where}: now notebook {new['nb']} cell {new['cell']} ({new['kind']})")
        elif old["summary"] != new["summary"]:
            problems.append(f"{where}: summary {old['summary']!r} became {new['summary']!r}")
        elif old["texts"] != new["texts"]:
            gone = [t for t in old["texts"] if t not in new["texts"]][:3]
            added = [t for t in new["texts"] if t not in old["texts"]][:3]
            problems.append(f"{where}: texts differ, e.g. gone {gone}, new {added}")
        elif old.get("geometry", "") != new.get("geometry", ""):
            problems.append(f"{where}: same texts, but a place, size, style or id differs")
    return problems


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--compare", nargs=2, metavar=("BEFORE", "AFTER"), help="compare two dumps")
    parser.add_argument("notebooks", nargs="*", type=Path, help="notebooks to run (default: 00-06)")
    args = parser.parse_args(argv)
    if args.compare:
        before, after = (json.loads(Path(p).read_text()) for p in args.compare)
        problems = compare(before, after)
        print("\n".join(problems) or f"same: {len(before)} pictures")
        return 1 if problems else 0
    notebooks = [p.resolve() for p in args.notebooks] or sorted((ROOT / "notebooks").glob("0[0-6]_*.ipynb"))
    json.dump(dump(notebooks), sys.stdout, ensure_ascii=False, indent=0)
    return 0


if __name__ == "__main__":
    sys.exit(main())
