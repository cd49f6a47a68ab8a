"""The first code cell of every notebook: install tutorial_lib on Colab, do nothing in the course environment.

The cell is generated from `[project.urls] Source` in pyproject.toml so that one line says where the
library comes from. `.ci/execute_notebooks.py` puts it in place before running a notebook, and
tests/test_environment.py checks that every committed notebook starts with exactly this cell.
"""

import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
TAG = "setup"

TEMPLATE = """\
# Setup. In the course environment (`make lab`, conda, Binder) tutorial_lib is already installed and this
# cell does nothing. Elsewhere (Colab) it installs tutorial_lib, and nothing else, from the course repository.
import importlib.util
import sys

if importlib.util.find_spec("tutorial_lib") is None:
    get_ipython().run_line_magic("pip", "install --quiet --no-deps git+{url}")
    importlib.invalidate_caches()
if "google.colab" in sys.modules:
    from google.colab import output  # Colab shows ipywidgets only with its custom widget manager

    output.enable_custom_widget_manager()"""


def source_url() -> str:
    with open(ROOT / "pyproject.toml", "rb") as f:
        return tomllib.load(f)["project"]["urls"]["Source"]


def setup_source() -> str:
    return TEMPLATE.format(url=source_url())


def ensure_setup_cell(notebook) -> None:
    """Make the notebook's first code cell the setup cell (inserted before the first code cell if absent)."""
    import nbformat

    code_cells = [i for i, cell in enumerate(notebook.cells) if cell.cell_type == "code"]
    for i in code_cells:
        if TAG in notebook.cells[i].metadata.get("tags", []):
            notebook.cells[i].source = setup_source()
            if i != code_cells[0]:
                notebook.cells.insert(code_cells[0], notebook.cells.pop(i))
            return
    cell = nbformat.v4.new_code_cell(setup_source(), metadata={"tags": [TAG]})
    position = code_cells[0] if code_cells else len(notebook.cells)
    notebook.cells.insert(position, cell)
