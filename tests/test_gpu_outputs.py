"""The `gpu` cells show what a real GPU printed: `.ci/store_gpu_outputs.py` fills them in from a recording, matched
by code, and `make notebooks` (.ci/execute_notebooks.py) keeps those outputs on a machine without CUDA."""

import json
from pathlib import Path

import nbformat
import pytest
import torch
from scripts import load_script

GPU_SOURCE = "# GPU only\nimport torch\n\nif not torch.cuda.is_available():\n    print('No CUDA device here')\n"
RECORDED_OUTPUT = {"name": "stdout", "output_type": "stream", "text": "allocated 400,556,032 B\n"}


def store_script():
    return load_script(Path(".ci/store_gpu_outputs.py"))


def notebook_with_a_gpu_cell(tmp_path, source=GPU_SOURCE):
    cells = [
        nbformat.v4.new_code_cell("x = 1\nprint(x)"),
        nbformat.v4.new_code_cell(source, metadata={"tags": ["gpu"]}),
        nbformat.v4.new_code_cell("print(x + 1)"),
    ]
    path = tmp_path / "n.ipynb"
    nbformat.write(nbformat.v4.new_notebook(cells=cells), path)
    return path


def recording(source=GPU_SOURCE):
    return {"06_x.ipynb": [{"cell_index": 1, "source": source, "outputs": [RECORDED_OUTPUT]}]}


def test_code_only_ignores_comments_and_blank_lines():
    code_only = store_script().code_only
    assert code_only("# a\nimport torch  \n\n  # b\nx = 1\n") == "import torch\nx = 1"


def test_a_cell_whose_code_ran_gets_the_recorded_output_and_says_where_it_was_recorded(tmp_path):
    script = store_script()
    edited_comments = GPU_SOURCE.replace("# GPU only", "# GPU only: now moved to a deep dive")
    path = notebook_with_a_gpu_cell(tmp_path, edited_comments)
    for _ in range(2):  # storing twice keeps one provenance line
        filled, missing = script.store([path], recording(), "NVIDIA H100, torch 2.11")
        assert (filled, missing) == (1, [])
    cell = nbformat.read(path, as_version=4).cells[1]
    assert [o["text"] for o in cell.outputs] == [RECORDED_OUTPUT["text"]]
    assert cell.source.splitlines()[0].startswith("# Output recorded on NVIDIA H100, torch 2.11")
    assert cell.source.count("# Output recorded on") == 1


def test_a_cell_whose_code_changed_is_reported_and_left_alone(tmp_path):
    script = store_script()
    path = notebook_with_a_gpu_cell(tmp_path, GPU_SOURCE.replace("No CUDA", "No GPU"))
    filled, missing = script.store([path], recording(), "NVIDIA H100, torch 2.11")
    assert filled == 0 and len(missing) == 1 and "n.ipynb cell 1" in missing[0]
    assert nbformat.read(path, as_version=4).cells[1].outputs == []


@pytest.mark.skipif(torch.cuda.is_available(), reason="with CUDA the gpu cell runs for real and stores its own output")
def test_make_notebooks_keeps_the_recorded_output_without_cuda(tmp_path):
    path = notebook_with_a_gpu_cell(tmp_path)
    store_script().store([path], recording(), "NVIDIA H100, torch 2.11")
    load_script(Path(".ci/execute_notebooks.py")).execute(path)
    notebook = nbformat.read(path, as_version=4)
    code = [cell for cell in notebook.cells if cell.cell_type == "code"]
    assert [cell.execution_count for cell in code] == list(range(1, len(code) + 1))  # the gpu cell ran (CPU branch)
    gpu_cell = next(cell for cell in code if "gpu" in cell.metadata.get("tags", []))
    assert [o["text"] for o in gpu_cell.outputs] == [RECORDED_OUTPUT["text"]]
    assert json.dumps(code[-1].outputs[0]["text"]) == json.dumps("2\n")


def test_record_runs_the_notebook_keeps_only_the_gpu_cells_and_store_reads_the_recording(tmp_path):
    path = notebook_with_a_gpu_cell(tmp_path)
    recorder = load_script(Path(".ci/record_gpu_outputs.py"))
    out = tmp_path / "recording.json"
    assert recorder.main([str(out), "--executed", str(tmp_path / "ran"), str(path)]) == 0
    recording = json.loads(out.read_text())
    (cell,) = recording["n.ipynb"]
    expected = "No CUDA device here\n" if not torch.cuda.is_available() else None
    ran = nbformat.read(tmp_path / "ran" / "n.ipynb", as_version=4)  # the whole notebook, every cell's output
    assert [c.outputs[0]["text"] for c in ran.cells if c.cell_type == "code" and c.outputs] == [
        "1\n",
        *([expected] if not torch.cuda.is_available() else []),  # with CUDA the gpu cell prints nothing
        "2\n",
    ]
    assert cell["cell_index"] == 1 and cell["source"] == GPU_SOURCE
    if expected:
        assert [o["text"] for o in cell["outputs"]] == [expected]
    assert recording["_machine"]["torch"] == torch.__version__
    filled, missing = store_script().store([path], recording, "this machine")
    assert (filled, missing) == (1, [])
