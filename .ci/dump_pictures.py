"""Every picture the notebooks draw, as text, so two versions of the library can be compared picture by picture.

For maintainers changing how pictures are built (not what they show): run it before and after, then compare.

    .venv/bin/python .ci/dump_pictures.py > /tmp/before.json          # on the old code
    .venv/bin/python .ci/dump_pictures.py > /tmp/after.json           # on the new code
    .venv/bin/python .ci/dump_pictures.py --compare /tmp/before.json /tmp/after.json

    .venv/bin/python .ci/dump_pictures.py --deep-dives > /tmp/all.json  # the deep dives too (a few minutes)

It runs the code cells of notebooks 00-07, each notebook in a child process of its own (one notebook given: in
this process), with ``display`` a no-op and every public ``tutorial_lib`` function wrapped: each call whose result
has a scene (``result.scene``, or ``result.figure.scene`` for ``show_error``'s report) is a picture, so a picture
function added later is recorded without changing this script. A picture's kind is its function's name without
``draw_`` (``layout``, ``graph``, ``names``, ``sharing``, ``places``, ``allocator_snapshot``, ``cuda_memory``);
``show_error`` gives ``error`` and ``draw_memory_timeline`` ``timeline``. The live explorers
(``tl.stride_explorer``, ``tl.view_copy_explorer``, ``tl.GraphStepper``) are recorded after each cell that leaves
a new or changed one in the notebook's names, and a ``GraphStepper`` also at each state it moves to
(``step_forward``, ``step_back``, ``goto``: kind ``GraphStepper step``). Chapter 7's child processes run their
function from ``tutorial_lib.workers`` and start here as in the notebook. Cells that need CUDA draw nothing
without it. For each picture it records its text summary, the (id, text) of every text its scene draws and a
digest of the whole scene (every item's place, size, style and id, and the style sheet, floats rounded to 3
decimals), each address it shows (``0x…``, the names picture's ``id …7c30``) numbered in order of appearance so
two runs compare alike. A cell that raises without the ``raises-exception`` tag is named on stderr. The comparison
matches pictures by (notebook, cell, kind), prints what differs, a picture only one dump has as gone or new, and
exits 1 when anything differs. ``--counts DUMP`` prints each notebook's pictures by kind.
"""

from __future__ import annotations

import argparse
import contextlib
import dataclasses
import difflib
import hashlib
import inspect
import io
import json
import os
import re
import subprocess
import sys
import warnings
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


# What differs from run to run in a picture: a memory address (0x7f3a…), or the last hex digits of an object's id or
# a storage's address that the names picture prints ("id …7c30", "at …39d0").
_ADDRESS = re.compile(r"0x[0-9a-fA-F]+|(?<=id )…[0-9a-f]{4}(?![0-9a-f])|(?<=at )…[0-9a-f]{4}(?![0-9a-f])")


class Addresses:
    """Numbers each address a picture shows in the order it first appears (``<address 1>``, ...), so a dump is the
    same from run to run and still tells two addresses of one picture apart."""

    def __init__(self) -> None:
        self.numbers: dict[str, int] = {}

    def __call__(self, text: str) -> str:
        def number(match: re.Match) -> str:
            return f"<address {self.numbers.setdefault(match.group(0), len(self.numbers) + 1)}>"

        return _ADDRESS.sub(number, text)


def _texts(scene, mask=str) -> list[list[str]]:
    return sorted([ident, mask(text)] for ident, text in scene.texts()) if scene is not None else []


def _rounded(value, mask=str):
    """``value`` with every float rounded to 3 decimals (a refactoring may reorder arithmetic), tuples as lists, and
    every string passed through ``mask``."""
    if isinstance(value, float):
        return round(value, 3) + 0.0  # + 0.0: -0.0 and 0.0 print alike
    if isinstance(value, str):
        return mask(value)
    if isinstance(value, (list, tuple)):
        return [_rounded(v, mask) for v in value]
    if isinstance(value, dict):
        return {str(k): _rounded(v, mask) for k, v in sorted(value.items())}
    if dataclasses.is_dataclass(value):
        return [type(value).__name__, *(_rounded(getattr(value, f.name), mask) for f in dataclasses.fields(value))]
    return value


def _geometry(scene, mask=str) -> str:
    """A digest of everything the scene draws: size, every item (kind, place, style, id, text) and its styles."""
    if scene is None:
        return ""
    whole = [scene.width, scene.height, scene.title, scene.items, scene.styles]
    return hashlib.sha256(json.dumps(_rounded(whole, mask), ensure_ascii=False).encode()).hexdigest()[:16]


def picture_record(where: dict, kind: str, summary: str, scene) -> dict:
    """What the dump keeps of one picture, its addresses numbered (the scene's, in drawing order, first)."""
    mask = Addresses()
    geometry = _geometry(scene, mask)
    return {**where, "kind": kind, "summary": mask(summary), "texts": _texts(scene, mask), "geometry": geometry}


# Kinds kept from the first version of this script, so that dumps made with it still compare.
_KINDS = {"show_error": "error", "draw_memory_timeline": "timeline"}


def kind_of(name: str) -> str:
    """The kind recorded for a picture drawn by ``tutorial_lib.<name>``."""
    return _KINDS.get(name, name.removeprefix("draw_"))


def scene_of(result):
    """The scene a ``tutorial_lib`` function's result draws (None when it draws none, or is a live explorer)."""
    from tutorial_lib.explorers.base import Explorer

    if isinstance(result, Explorer):  # recorded after each cell, in the state the cell leaves it
        return None
    figure = getattr(result, "figure", result)  # show_error returns a report holding its figure
    scene = getattr(figure, "scene", None)
    return scene if hasattr(scene, "texts") else None


def wrap_library(tl, record) -> dict:
    """Wrap every public function of ``tl`` so that each picture it returns is recorded; the originals, by name."""
    originals = {
        name: value
        for name, value in vars(tl).items()
        if not name.startswith("_") and inspect.isfunction(value) and not inspect.isgeneratorfunction(value)
    }

    def wrapped(name: str, original):
        def call(*args, **kwargs):
            result = original(*args, **kwargs)
            scene = scene_of(result)
            if scene is not None:
                figure = getattr(result, "figure", result)
                record(kind_of(name), getattr(result, "summary", None) or getattr(figure, "summary", ""), scene)
            return result

        call.__wrapped__ = original
        return call

    for name, original in originals.items():
        setattr(tl, name, wrapped(name, original))
    return originals


def _display(*objects, **options) -> None:
    """IPython's ``display``, which notebooks call without importing it: the pictures are recorded when drawn."""


def dump_each(notebooks: list[Path]) -> list[dict]:
    """``dump`` of each notebook in a child process of its own: a notebook can leave state behind (a seed, a grad
    mode, a hook, a saved-tensor hook left on) that would change what the next one draws."""
    records = []
    for path in notebooks:
        child = subprocess.run(  # noqa: S603 - this script, on the course's own notebooks
            [sys.executable, str(Path(__file__).resolve()), str(path)], capture_output=True, text=True, check=False
        )
        sys.stderr.write(child.stderr)
        if child.returncode:
            raise RuntimeError(f"dumping {path.name} failed (exit code {child.returncode})")
        records += json.loads(child.stdout)
    return records


def _code(cell) -> str:
    lines = cell.source.splitlines()
    return "\n".join(line for line in lines if not line.lstrip().startswith(("%", "!")))


def dump(notebooks: list[Path]) -> list[dict]:
    """Run ``notebooks`` in this process and return one record per picture drawn."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    import nbformat

    import tutorial_lib as tl
    from tutorial_lib.explorers.base import Explorer
    from tutorial_lib.explorers.graph_stepper import GraphStepper

    records: list[dict] = []
    where = {"nb": "", "cell": 0}
    last_shown: dict[int, tuple[str, str]] = {}  # an explorer's id -> its last recorded (summary, digest)

    def record(kind: str, summary: str, scene) -> None:
        records.append(picture_record(where, kind, summary, scene))

    originals = wrap_library(tl, record)
    moved = GraphStepper._moved

    reading = []  # a stepper reading its scene the first time steps through every state to size its frame

    def stepper_moved(self) -> None:
        moved(self)
        if not reading:
            reading.append(self)
            try:
                record("GraphStepper step", self.summary, self.scene)
            finally:
                reading.pop()

    GraphStepper._moved = stepper_moved
    try:
        for path in notebooks:
            notebook = nbformat.read(path, as_version=4)
            namespace = {"__name__": "__main__", "display": _display}
            os.chdir(path.parent)
            where["nb"] = path.name[:2] if path.name[:2].isdigit() else path.stem
            for index, cell in enumerate(notebook.cells):
                if cell.cell_type != "code" or cell.source.lstrip().startswith("%%"):
                    continue
                where["cell"] = index
                with contextlib.redirect_stdout(io.StringIO()), warnings.catch_warnings():
                    warnings.simplefilter("ignore")
                    try:
                        exec(compile(_code(cell), f"{path.name}[{index}]", "exec"), namespace)  # noqa: S102
                    except Exception as error:  # noqa: BLE001 - cells tagged raises-exception raise on purpose
                        if "raises-exception" not in cell.metadata.get("tags", []):
                            print(f"{path.name} cell {index}: {type(error).__name__}: {error}", file=sys.stderr)
                for value in list(namespace.values()):
                    if isinstance(value, Explorer):
                        shown = (value.summary, _geometry(value.scene, Addresses()))
                        if last_shown.get(id(value)) != shown:  # a new explorer, or one the cell changed
                            last_shown[id(value)] = shown
                            record(type(value).__name__, value.summary, value.scene)
                plt.close("all")
    finally:
        os.chdir(ROOT)
        GraphStepper._moved = moved
        for name, original in originals.items():
            setattr(tl, name, original)
    return records


def counts(records: list[dict]) -> dict[str, dict[str, int]]:
    """How many pictures of each kind each notebook drew: {notebook: {kind: count}}."""
    table: dict[str, dict[str, int]] = {}
    for one in records:
        kinds = table.setdefault(one["nb"], {})
        kinds[one["kind"]] = kinds.get(one["kind"], 0) + 1
    return table


def _differences(old: dict, new: dict) -> list[str]:
    where = f"notebook {old['nb']} cell {old['cell']} ({old['kind']})"
    if (old["nb"], old["cell"], old["kind"]) != (new["nb"], new["cell"], new["kind"]):
        return [f"{where}: now notebook {new['nb']} cell {new['cell']} ({new['kind']})"]
    if old["summary"] != new["summary"]:
        return [f"{where}: summary {old['summary']!r} became {new['summary']!r}"]
    if old["texts"] != new["texts"]:
        gone = [t for t in old["texts"] if t not in new["texts"]][:3]
        added = [t for t in new["texts"] if t not in old["texts"]][:3]
        return [f"{where}: texts differ, e.g. gone {gone}, new {added}"]
    if old.get("geometry", "") != new.get("geometry", ""):
        return [f"{where}: same texts, but a place, size, style or id differs"]
    return []


def compare(before: list[dict], after: list[dict]) -> list[str]:
    """What differs between two dumps, one line per picture (an empty list when they are the same).

    Pictures are matched by (notebook, cell, kind) in order, so a picture only one dump has (a new picture kind, a
    cell that now draws one more) is named as gone or new and the pictures around it are still compared one to one.
    """
    problems = []
    if len(before) != len(after):
        problems.append(f"{len(before)} pictures before, {len(after)} after")

    def keys(records):
        return [(r["nb"], r["cell"], r["kind"]) for r in records]

    matcher = difflib.SequenceMatcher(None, keys(before), keys(after), autojunk=False)
    for tag, i1, i2, j1, j2 in matcher.get_opcodes():
        if tag == "equal" or (tag == "replace" and i2 - i1 == j2 - j1):
            for old, new in zip(before[i1:i2], after[j1:j2]):
                problems += _differences(old, new)
            continue
        for label, records in (("gone", before[i1:i2]), ("new", after[j1:j2])):
            problems += [f"{label}: notebook {r['nb']} cell {r['cell']} ({r['kind']}): {r['summary']}" for r in records]
    return problems


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--compare", nargs=2, metavar=("BEFORE", "AFTER"), help="compare two dumps")
    parser.add_argument("--deep-dives", action="store_true", help="also run notebooks/deep_dives/*.ipynb")
    parser.add_argument("--counts", metavar="DUMP", help="print the pictures of each kind per notebook of a dump")
    parser.add_argument("notebooks", nargs="*", type=Path, help="notebooks to run (default: 00-07)")
    args = parser.parse_args(argv)
    if args.compare:
        before, after = (json.loads(Path(p).read_text()) for p in args.compare)
        problems = compare(before, after)
        print("\n".join(problems) or f"same: {len(before)} pictures")
        return 1 if problems else 0
    if args.counts:
        for notebook, kinds in counts(json.loads(Path(args.counts).read_text())).items():
            print(notebook, ", ".join(f"{kind} {n}" for kind, n in sorted(kinds.items())))
        return 0
    notebooks = [p.resolve() for p in args.notebooks] or sorted((ROOT / "notebooks").glob("0[0-7]_*.ipynb"))
    if args.deep_dives:
        notebooks += sorted((ROOT / "notebooks" / "deep_dives").glob("*.ipynb"))
    records = dump(notebooks) if len(notebooks) == 1 else dump_each(notebooks)
    json.dump(records, sys.stdout, ensure_ascii=False, indent=0)
    return 0


if __name__ == "__main__":
    sys.exit(main())
