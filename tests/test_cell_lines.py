"""cell_lines: a notebook line named by its cell and numbered as the editor shows it, in a real IPython shell that
runs each cell as a notebook does (test_magics.run). IPython strips a cell's (and a cell magic's body's) leading blank
lines before compiling, so the code's line numbers are short by them; the names and the fixes count them back in."""

from __future__ import annotations

import matplotlib
import pytest

matplotlib.use("Agg")

from IPython.core.interactiveshell import InteractiveShell  # noqa: E402
from test_magics import BUGGY_CELL, run  # noqa: E402

from tutorial_lib.facts.cell_lines import cell_place, shown_lineno  # noqa: E402


@pytest.fixture(scope="module")
def shell():
    shell = InteractiveShell.instance()
    assert shell.run_cell("%load_ext tutorial_lib").success
    return shell


STALE_EXP = "with tl.watch_inplace():\n    x = torch.ones(3, requires_grad=True)\n    y = x.exp()\n    y.mul_(2)\n"


def test_a_cell_with_leading_blank_lines_is_numbered_as_the_editor_shows_it(shell, capsys):
    assert run(shell, capsys, "import torch\nimport tutorial_lib as tl")[0].success
    # y = x.exp() is the editor's line 5, y.mul_(2) its line 6
    result, output = run(shell, capsys, "\n\n" + STALE_EXP + "    print(tl.inplace_hazards(y)[0].explanation)\n")
    assert result.success
    assert "Saved at line 5 of this cell; changed at line 6 of this cell (mul_)." in output
    result, output = run(shell, capsys, "\n\n" + STALE_EXP + "    y.sum().backward()\n")
    assert "saved at:     line 5 of this cell  y = x.exp()" in output
    assert "changed at:   line 6 of this cell  y.mul_(2)" in output
    assert "y = y.clone() just before line 6 " in output and "(saved at line 5)" in output


def test_a_magic_body_with_a_blank_first_line_is_counted_under_the_magic(shell, capsys):
    # under the magic's line: 1 blank, 2 import, 3 a = ..., 4 e = a.exp(), 5 e.add_(1)
    result, output = run(shell, capsys, "%%watch_inplace\n\n" + BUGGY_CELL)
    assert "saved at:     line 4 under %%watch_inplace  e = a.exp()" in output
    assert "changed at:   line 5 under %%watch_inplace  e.add_(1)" in output
    assert "just before line 5 " in output and "(saved at line 4)" in output
    # the same lines named from a later cell: by the magic's cell
    later, output = run(shell, capsys, "import tutorial_lib as tl\nprint(tl.explain_inplace(e)[0])")
    assert f"saved at:     line 4 under %%watch_inplace in cell [{result.execution_count}]" in output


def test_a_function_from_an_earlier_cell_with_leading_blank_lines_is_numbered_as_the_editor_shows_it(shell, capsys):
    defined = run(shell, capsys, "\n\ndef stale(x):\n    y = x.exp()\n    y.add_(1)\n    return y\n")[0]
    assert defined.success
    # the calling body: 1 blank, 2 blank, 3 import, 4 x = ..., 5 stale(x)...
    cell = "%%watch_inplace\n\n\nimport torch\nx = torch.ones(3, requires_grad=True)\nstale(x).sum().backward()\n"
    result, output = run(shell, capsys, cell)
    assert f"saved at:     line 4 of cell [{defined.execution_count}]  y = x.exp()" in output
    assert f"changed at:   line 5 of cell [{defined.execution_count}]  y.add_(1)" in output
    assert "called from line 5 under %%watch_inplace  stale(x).sum().backward()" in output


def test_a_line_under_time_is_named_by_its_cell(shell, capsys):
    assert run(shell, capsys, "import torch\nimport tutorial_lib as tl")[0].success
    # under %%time: 1 blank, 2 with, 3 x = ..., 4 y = x.exp(), 5 y.mul_(2)
    cell = "%%time\n\n" + STALE_EXP + "    print(tl.inplace_hazards(y)[0].explanation)\n"
    result, output = run(shell, capsys, cell)
    assert result.success and "<timed exec>" not in output
    assert "Saved at line 4 under %%time; changed at line 5 under %%time (mul_)." in output


def test_the_explanations_line_numbers_as_data_are_the_editors_too(shell, capsys):
    assert run(shell, capsys, "import torch\nimport tutorial_lib as tl")[0].success
    cell = "\n\n" + STALE_EXP + "    try:\n        y.sum().backward()\n    except RuntimeError as error:\n"
    cell += "        found = tl.explanation_of(error)\n    print(found.saved_line, found.changed_lines)\n"
    result, output = run(shell, capsys, cell)
    assert result.success and output.strip() == "5 (6,)"


def test_the_graphs_line_labels_count_a_cells_leading_blank_lines(shell, capsys):
    assert run(shell, capsys, "import torch\nimport tutorial_lib as tl")[0].success
    cell = "\n\n" + STALE_EXP + "    drawn = tl.draw_graph(y)\nprint([text for _, text in drawn.scene.texts()])\n"
    result, output = run(shell, capsys, cell)
    assert result.success
    assert "saved at line 5 of this cell" in output and "changed at line 6 of this cell (mul_)" in output


def test_a_file_keeps_its_numbers_and_bad_arguments_are_named():
    assert shown_lineno("/home/me/train.py", 7) == 7 and cell_place("/home/me/train.py", 7) is None
    assert shown_lineno(None, None) is None
    with pytest.raises(TypeError, match="lineno"):
        cell_place("train.py", "7")
    with pytest.raises(TypeError, match="filename"):
        cell_place(7, 7)
