"""Restart & Run All for the course notebooks, then strip what would make stored outputs noisy.

Used by `make notebooks` after editing a notebook: the first code cell is made the Colab setup cell
(see setup_cell.py), then each notebook runs top to bottom in a fresh kernel
from this environment (execution counts 1..n), and per-cell timing metadata is dropped so a diff shows
only real changes. nbval (`make test`) then proves the stored outputs are what the code produces.
"""

import sys
from pathlib import Path

import nbformat
from nbclient import NotebookClient
from reset_exercises import tag_exercise_cells
from setup_cell import ensure_setup_cell

KEEP_CELL_METADATA = {"tags", "collapsed", "jupyter", "editable", "deletable"}


def execute(path: Path) -> None:
    notebook = nbformat.read(path, as_version=4)
    ensure_setup_cell(notebook)
    tag_exercise_cells(notebook)  # what `make reset-exercises` restores
    client = NotebookClient(
        notebook, timeout=900, kernel_name="python3", resources={"metadata": {"path": str(path.parent)}}
    )
    client.execute()
    for cell in notebook.cells:
        cell.metadata = {k: v for k, v in cell.metadata.items() if k in KEEP_CELL_METADATA}
        cell.pop("id", None)
    notebook.metadata = {
        "kernelspec": {"display_name": "Python 3 (ipykernel)", "language": "python", "name": "python3"},
        "language_info": {"name": "python", "version": "3.11"},
    }
    notebook.nbformat_minor = 4
    nbformat.write(notebook, path)
    print(f"executed {path}")


if __name__ == "__main__":
    paths = [Path(p) for p in sys.argv[1:]] or sorted(Path("notebooks").glob("*.ipynb"))
    for notebook_path in paths:
        execute(notebook_path)
