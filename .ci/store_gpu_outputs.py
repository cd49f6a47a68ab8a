"""Put what a real GPU printed into the notebooks' `gpu` cells, so that a learner without one reads it.

A recording (for example ../shared/gpu-runs/h100-2026-11/gpu_cell_outputs.json) holds, per notebook, each `gpu`
cell's source as it ran and its outputs as nbformat output objects. A cell is matched by its code with comment
lines and blank lines left out, so it may move to another notebook (a deep dive) or have its comments edited, but
its code must be what ran: a cell whose code changed finds no recording and is reported. The cell's first comment
line then says where its output comes from ("Output recorded on <device>, torch <version>").

`make notebooks` keeps these outputs on a machine without CUDA (execute_notebooks.py); with CUDA the cells run for
real and store their own.

Usage: python .ci/store_gpu_outputs.py RECORDING.json "NVIDIA H100 80GB HBM3, torch 2.11.0+cu130" [NOTEBOOK ...]
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import nbformat
from notebook_paths import all_notebooks

GPU_TAG = "gpu"
RECORDED = "# Output recorded on "


def code_only(source: str) -> str:
    """The lines of a cell that run: no comment lines, no blank lines, no trailing spaces."""
    lines = (line.rstrip() for line in source.splitlines())
    return "\n".join(line for line in lines if line and not line.lstrip().startswith("#"))


def recorded_cells(recording: dict) -> dict[str, list]:
    """``{code of the cell: its outputs}`` over every notebook of the recording."""
    cells = {}
    for notebook_cells in recording.values():
        if not isinstance(notebook_cells, list):
            continue  # "_machine": where the recording was made
        for cell in notebook_cells:
            cells[code_only(cell["source"])] = cell["outputs"]
    return cells


def with_provenance(source: str, where: str) -> str:
    """``source`` with one first comment line saying where its stored output was recorded (replacing an older one)."""
    lines = [line for line in source.splitlines() if not line.startswith(RECORDED)]
    return "\n".join([f"{RECORDED}{where}; without CUDA this cell prints one line instead.", *lines])


def store(paths: list[Path], recording: dict, where: str) -> tuple[int, list[str]]:
    """Fill every `gpu` cell of ``paths`` from ``recording``; returns (cells filled, cells without a recording)."""
    recorded = recorded_cells(recording)
    filled, missing = 0, []
    for path in paths:
        notebook = nbformat.read(path, as_version=4)
        changed = False
        for index, cell in enumerate(notebook.cells):
            if cell.cell_type != "code" or GPU_TAG not in cell.metadata.get("tags", []):
                continue
            outputs = recorded.get(code_only(cell.source))
            if outputs is None:
                missing.append(f"{path.name} cell {index}: {cell.source.splitlines()[0][:80] if cell.source else ''}")
                continue
            cell.outputs = [nbformat.from_dict(output) for output in outputs]
            cell.source = with_provenance(cell.source, where)
            filled += 1
            changed = True
        if changed:
            nbformat.write(notebook, path)
    return filled, missing


def main(argv: list[str]) -> int:
    if len(argv) < 2:
        print(__doc__)
        return 2
    recording = json.loads(Path(argv[0]).read_text())
    paths = [Path(p) for p in argv[2:]] or all_notebooks()
    filled, missing = store(paths, recording, argv[1])
    print(f"{filled} gpu cells filled from {argv[0]}")
    for cell in missing:
        print("no recording for", cell)
    return 1 if missing else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
