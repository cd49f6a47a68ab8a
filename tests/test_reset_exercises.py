"""`make reset-exercises`: exercise cells are tagged, and resetting restores exactly them."""

import shutil
import subprocess
from pathlib import Path

import nbformat
import pytest
from scripts import course_notebooks, load_script

ROOT = Path(__file__).resolve().parents[1]
NOTEBOOKS = course_notebooks()
WITH_EXERCISES = [p for p in NOTEBOOKS if "tl.check(" in p.read_text()]


def load_reset():
    return load_script(Path(".ci/reset_exercises.py"))


@pytest.mark.parametrize("path", WITH_EXERCISES, ids=lambda p: p.stem)
def test_every_exercise_is_a_tagged_stub_and_check_pair_or_a_prediction_cell(path):
    reset = load_reset()
    notebook = nbformat.read(path, as_version=4)
    tagged = reset.exercise_cells(notebook)
    checks = [c for c in notebook.cells if c.cell_type == "code" and "tl.check(" in c.source]
    predictions = [c for c in checks if reset.is_prediction_cell(c)]
    assert checks and len(tagged) == 2 * len(checks) - len(predictions)
    for cell in predictions:
        assert cell.metadata["tags"].count("predict") == 1
    pairs = [cell for cell in tagged if cell not in predictions]
    for stub, check in zip(pairs[::2], pairs[1::2]):
        assert "tl.check(" in check.source and "tl.check(" not in stub.source
        assert "..." in stub.source  # the untouched stub
    for check in checks:
        assert "..." in (check.source if check in predictions else "...")
        shown = "".join(o.get("text", "") + str(o.get("data", {}).get("text/plain", "")) for o in check.outputs)
        assert "not attempted" in shown.lower(), check.source


def git(cwd, *args):
    subprocess.run(["git", *args], cwd=cwd, check=True, capture_output=True)


def test_reset_restores_exercise_cells_and_nothing_else(tmp_path):
    reset = load_reset()
    source = next(p for p in NOTEBOOKS if p.name.startswith("01_"))
    (tmp_path / "notebooks").mkdir()
    copy = tmp_path / "notebooks" / source.name
    committed = nbformat.read(source, as_version=4)
    reset.tag_exercise_cells(committed)  # as `make notebooks` does
    nbformat.write(committed, copy)
    git(tmp_path, "init", "-q")
    git(tmp_path, "add", ".")
    git(tmp_path, "-c", "user.name=t", "-c", "user.email=t@t", "commit", "-qm", "course")

    notebook = nbformat.read(copy, as_version=4)
    stub, check = reset.exercise_cells(notebook)[:2]
    stub.source = "answer = (3, 1)"
    check.outputs = [nbformat.v4.new_output("stream", text="✅ correct")]
    check.execution_count = 99
    other = next(c for c in notebook.cells if c.cell_type == "code" and "exercise" not in c.metadata.get("tags", []))
    other.source += "\n# a learner's note"
    solution = next(c for c in notebook.cells if c.cell_type == "markdown" and "<details" in c.source)
    solution.source += "\nmy own words"
    nbformat.write(notebook, copy)

    assert reset.reset(copy, "HEAD", tmp_path) == 2
    after = nbformat.read(copy, as_version=4)
    pristine = committed
    assert [c.source for c in reset.exercise_cells(after)] == [c.source for c in reset.exercise_cells(pristine)]
    assert [c.outputs for c in reset.exercise_cells(after)] == [c.outputs for c in reset.exercise_cells(pristine)]
    assert any(c.source.endswith("# a learner's note") for c in after.cells)  # other cells kept
    assert any(c.source.endswith("my own words") for c in after.cells)  # solutions untouched
    assert reset.reset(copy, "HEAD", tmp_path) == 0  # nothing left to reset


def test_reset_outside_git_says_why(tmp_path):
    reset = load_reset()
    (tmp_path / "notebooks").mkdir()
    copy = tmp_path / "notebooks" / "x.ipynb"
    shutil.copy(NOTEBOOKS[1], copy)
    with pytest.raises(SystemExit, match="git checkout"):
        reset.reset(copy, "HEAD", tmp_path)


@pytest.mark.parametrize("path", [p for p in NOTEBOOKS if "# Predict" in p.read_text()], ids=lambda p: p.stem)
def test_the_cell_after_each_prediction_keeps_its_answer_collapsed_until_it_runs(path):
    """A learner who opens the notebook must not read the answer before predicting: `make notebooks` collapses the
    stored output of the reveal cell (JupyterLab shows it again when the cell runs)."""
    reset = load_reset()
    code = [cell for cell in nbformat.read(path, as_version=4).cells if cell.cell_type == "code"]
    reveals = [after for cell, after in zip(code, code[1:]) if reset.is_prediction_cell(cell)]
    reveals = [cell for cell in reveals if not reset.is_prediction_cell(cell)]
    assert reveals
    for cell in reveals:
        assert cell.metadata.get("jupyter", {}).get("outputs_hidden") is True, cell.source[:80]


def test_collapse_reveals_collapses_only_the_cell_after_a_prediction():
    execute = load_script(Path(".ci/execute_notebooks.py"))
    cells = [
        nbformat.v4.new_code_cell("x = 1"),
        nbformat.v4.new_code_cell('# Predict: x?\ntl.check("a", ...)', metadata={"tags": ["predict"]}),
        nbformat.v4.new_code_cell("print(x)"),
        nbformat.v4.new_code_cell("print(x + 1)"),
    ]
    notebook = nbformat.v4.new_notebook(cells=cells)
    assert execute.collapse_reveals(notebook) == 1
    assert [cell.metadata.get("jupyter", {}).get("outputs_hidden", False) for cell in cells] == [0, 0, 1, 0]
