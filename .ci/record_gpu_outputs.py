"""Run every `gpu` cell of the course on this machine and write what it printed to a recording (JSON).

For a maintainer with a GPU, or a GPU lent for a few minutes: the recording is what `store_gpu_outputs.py` puts
into the notebooks on any machine afterwards. Each notebook that has `gpu` cells runs top to bottom in one fresh
kernel, in the notebook's folder (a `gpu` cell may use what earlier cells defined), errors allowed, and only the
`gpu` cells' outputs are kept. The recording has the
format of ../shared/gpu-runs/h100-2026-11/gpu_cell_outputs.json: per notebook, each cell's index, its source and
its outputs as nbformat output objects, plus the machine it ran on.

Usage: python .ci/record_gpu_outputs.py OUT.json [--executed DIR] [NOTEBOOK ...]
(default: every notebook with a gpu cell). With --executed, each whole executed notebook is written to DIR too, so
that the other cells' outputs on a machine with CUDA can be compared with the stored ones.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import nbformat
from nbclient import NotebookClient
from notebook_paths import all_notebooks

GPU_TAG = "gpu"


def gpu_cells(notebook) -> list[tuple[int, object]]:
    return [
        (index, cell)
        for index, cell in enumerate(notebook.cells)
        if cell.cell_type == "code" and GPU_TAG in cell.metadata.get("tags", [])
    ]


def machine() -> dict:
    import torch

    device = torch.cuda.get_device_name() if torch.cuda.is_available() else "no CUDA device"
    return {"device": device, "torch": torch.__version__, "python": sys.version.split()[0]}


def record(path: Path, timeout: int = 600, executed: Path | None = None) -> list[dict]:
    """Run one notebook that has `gpu` cells in a fresh kernel; return its `gpu` cells with their new outputs."""
    notebook = nbformat.read(path, as_version=4)
    if not gpu_cells(notebook):
        return []
    client = NotebookClient(
        notebook,
        timeout=timeout,
        kernel_name="python3",
        allow_errors=True,
        resources={"metadata": {"path": str(path.parent)}},
    )
    client.execute()
    if executed is not None:
        executed.mkdir(parents=True, exist_ok=True)
        nbformat.write(notebook, executed / path.name)
    return [
        {"cell_index": index, "source": cell.source, "outputs": [dict(output) for output in cell.outputs]}
        for index, cell in gpu_cells(notebook)
    ]


def main(argv: list[str]) -> int:
    if not argv:
        print(__doc__)
        return 2
    out, rest, executed = argv[0], argv[1:], None
    if rest[:1] == ["--executed"]:
        if len(rest) < 2:
            print("--executed needs a folder")
            return 2
        executed, rest = Path(rest[1]), rest[2:]
    paths = [Path(p) for p in rest] or all_notebooks()
    recording = {}
    for path in paths:
        cells = record(path, executed=executed)
        if cells:
            recording[path.name] = cells
            errors = sum(output.get("output_type") == "error" for cell in cells for output in cell["outputs"])
            print(f"{path.name}: {len(cells)} gpu cells run, {errors} errors")
    recording["_machine"] = machine()
    Path(out).write_text(json.dumps(recording, indent=1))
    print(f"recorded on {recording['_machine']}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
