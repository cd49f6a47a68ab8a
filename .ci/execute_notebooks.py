"""Restart & Run All for the course notebooks, then strip what would make stored outputs noisy.

Used by `make notebooks` after editing a notebook: the first code cell is made the Colab setup cell
(see setup_cell.py), then each notebook runs top to bottom in a fresh kernel
from this environment (execution counts 1..n), and per-cell timing metadata is dropped so a diff shows
only real changes. nbval (`make test`) then proves the stored outputs are what the code produces.

Cells tagged ``gpu`` keep the outputs a real GPU printed (see store_gpu_outputs.py) when this machine has no
CUDA: they still run (their CPU branch, so the execution counts stay 1..n), and what they printed here is
dropped. On a machine with CUDA they run for real and their new outputs are stored.
"""

import sys
from pathlib import Path

import nbformat
from nbclient import NotebookClient
from notebook_paths import all_notebooks
from reset_exercises import PREDICT_TAG, tag_exercise_cells
from setup_cell import ensure_setup_cell

KEEP_CELL_METADATA = {"tags", "collapsed", "jupyter", "editable", "deletable"}


GPU_TAG = "gpu"


def collapse_reveals(notebook) -> int:
    """Collapse the stored output of the code cell right after each prediction, so that a learner who opens the
    notebook does not read the answer before predicting. JupyterLab shows such an output again as soon as the cell
    runs (CodeCell.execute sets outputHidden to false); nbval and `make html` still see it. Returns how many."""
    code = [cell for cell in notebook.cells if cell.cell_type == "code"]
    collapsed = 0
    for cell, after in zip(code, code[1:]):
        if PREDICT_TAG in cell.metadata.get("tags", []) and PREDICT_TAG not in after.metadata.get("tags", []):
            after.metadata.setdefault("jupyter", {})["outputs_hidden"] = True
            collapsed += 1
    return collapsed


def cuda_available() -> bool:
    import torch

    return torch.cuda.is_available()


def execute(path: Path) -> None:
    notebook = nbformat.read(path, as_version=4)
    ensure_setup_cell(notebook)
    tag_exercise_cells(notebook)  # what `make reset-exercises` restores
    collapse_reveals(notebook)
    gpu_cells = [cell for cell in notebook.cells if GPU_TAG in cell.metadata.get("tags", [])]
    recorded = [cell.get("outputs", []) for cell in gpu_cells]
    client = NotebookClient(
        notebook, timeout=900, kernel_name="python3", resources={"metadata": {"path": str(path.parent)}}
    )
    client.execute()
    if gpu_cells and not cuda_available():
        for cell, outputs in zip(gpu_cells, recorded):
            cell.outputs = outputs
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
    paths = [Path(p) for p in sys.argv[1:]] or all_notebooks()
    for notebook_path in paths:
        execute(notebook_path)
