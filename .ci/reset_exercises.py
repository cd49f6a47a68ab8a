"""`make reset-exercises`: put every exercise cell back to its untouched state, and nothing else.

An exercise is two code cells tagged ``exercise``: the stub a learner fills in (``answer = ...`` or a function
whose body is ``...``) and the ``tl.check(...)`` cell right after it. A quick prediction is one cell, tagged
``exercise`` and ``predict``: it starts with a ``# Predict`` comment and the learner writes the guess in place of
the ``...`` of its ``tl.check("…", ...)``. `make notebooks` tags them (``tag_exercise_cells``). Resetting replaces
each tagged cell, source and stored output, with the same cell of the committed notebook (``git show
REF:notebooks/<name>``, REF defaults to HEAD): the learner's other cells, the solutions (collapsed markdown) and
the library are never touched. Close the notebooks in JupyterLab first (or reload them from disk afterwards).

Usage: python .ci/reset_exercises.py [--ref REF] [NOTEBOOK ...]   (default: every notebook)
"""

from __future__ import annotations

import argparse
import subprocess
import sys
from pathlib import Path

import nbformat
from notebook_paths import all_notebooks

ROOT = Path(__file__).resolve().parent.parent
TAG = "exercise"
PREDICT_TAG = "predict"
PREDICT_MARK = "# Predict"


def is_prediction_cell(cell) -> bool:
    """A quick prediction: one code cell that starts with ``# Predict`` and calls ``tl.check(``."""
    return cell.cell_type == "code" and cell.source.lstrip().startswith(PREDICT_MARK) and "tl.check(" in cell.source


def _tag(cell, tag: str) -> None:
    tags = cell.metadata.setdefault("tags", [])
    if tag not in tags:
        tags.append(tag)


def tag_exercise_cells(notebook) -> int:
    """Tag each ``tl.check(`` cell and the code cell before it (its stub), or a prediction cell alone;
    returns how many exercises and predictions."""
    code = [cell for cell in notebook.cells if cell.cell_type == "code"]
    count = 0
    for before, cell in zip([None, *code], code):
        if "tl.check(" not in cell.source:
            continue
        if is_prediction_cell(cell):
            _tag(cell, TAG)
            _tag(cell, PREDICT_TAG)
        else:
            for tagged in (before, cell):
                _tag(tagged, TAG)
        count += 1
    return count


def exercise_cells(notebook) -> list:
    return [cell for cell in notebook.cells if cell.cell_type == "code" and TAG in cell.metadata.get("tags", [])]


def committed(path: Path, ref: str, root: Path = ROOT):
    relative = path.resolve().relative_to(root.resolve()).as_posix()
    result = subprocess.run(["git", "show", f"{ref}:{relative}"], cwd=root, capture_output=True, text=True)
    if result.returncode != 0:
        raise SystemExit(
            f"cannot read the committed {relative} at {ref!r} ({result.stderr.strip() or 'git failed'}); "
            "reset-exercises needs the course as a git checkout"
        )
    return nbformat.reads(result.stdout, as_version=4)


def reset(path: Path, ref: str = "HEAD", root: Path = ROOT) -> int:
    """Reset the exercise cells of one notebook (in the git checkout ``root``); returns how many cells changed."""
    notebook = nbformat.read(path, as_version=4)
    pristine = exercise_cells(committed(path, ref, root))
    current = exercise_cells(notebook)
    if len(current) != len(pristine):
        raise SystemExit(
            f"{path.name}: {len(current)} exercise cells here but {len(pristine)} in {ref}; "
            "restore the notebook with `git checkout -- notebooks/` instead"
        )
    changed = 0
    for cell, original in zip(current, pristine):
        if (cell.source, cell.get("outputs"), cell.get("execution_count")) != (
            original.source,
            original.get("outputs"),
            original.get("execution_count"),
        ):
            cell.source, cell.outputs, cell.execution_count = (
                original.source,
                original.outputs,
                original.execution_count,
            )
            changed += 1
    if changed:
        nbformat.write(notebook, path)
    return changed


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--ref", default="HEAD", help="the git revision holding the untouched notebooks")
    parser.add_argument("notebooks", nargs="*", type=Path)
    args = parser.parse_args(argv)
    paths = args.notebooks or all_notebooks()
    for path in paths:
        changed = reset(path, args.ref)
        print(f"{path.name}: {changed} exercise cell{'s' if changed != 1 else ''} reset")


if __name__ == "__main__":
    main(sys.argv[1:])
