"""The IPython extension: %load_ext tutorial_lib, %%watch_inplace and %%measure_memory in a real shell."""

from __future__ import annotations

import pathlib
import re

import matplotlib
import pytest

matplotlib.use("Agg")

from IPython.core.interactiveshell import InteractiveShell  # noqa: E402

BUGGY_CELL = """\
import torch
a = torch.randn(3, requires_grad=True)
e = a.exp()
e.add_(1)
e.sum().backward()
"""


@pytest.fixture(scope="module")
def shell():
    shell = InteractiveShell.instance()
    result = shell.run_cell("%load_ext tutorial_lib")
    assert result.success
    return shell


def run(shell, capsys, source):
    capsys.readouterr()
    result = shell.run_cell(source, store_history=True)  # as a notebook runs its cells
    captured = capsys.readouterr()
    return result, captured.out + captured.err


def test_the_watch_magic_shows_the_explanation_instead_of_a_traceback(shell, capsys):
    result, output = run(shell, capsys, "%%watch_inplace\n" + BUGGY_CELL)
    assert "RuntimeError: one of the variables needed for gradient computation" in output
    assert "stale tensor: the result of exp" in output
    # the cell's own lines, counted under the magic's line (as the fixes count them): line 3 saved, line 4 changed
    assert "saved at:     line 3 under %%watch_inplace  e = a.exp()" in output
    assert "changed at:   line 4 under %%watch_inplace  e.add_(1)   (add_, version 0 -> 1)" in output
    assert "Traceback" not in output and "---->" not in output
    assert shell.user_ns["e"]._version == 1  # the cell's variables are the notebook's


def test_the_watch_magic_shows_nothing_extra_when_all_is_well(shell, capsys):
    cell = "%%watch_inplace\nimport torch\nx = torch.ones(2, requires_grad=True)\n(x * 2).sum().backward()\nx.grad"
    result, output = run(shell, capsys, cell)
    assert result.success
    assert output.strip().endswith("tensor([2., 2.])") and output.strip().count("\n") == 0
    assert "stale" not in output and "Backward needs" not in output


def test_the_watch_magic_leaves_other_errors_to_ipython(shell, capsys):
    result, output = run(shell, capsys, "%%watch_inplace\nraise KeyError('not ours')")
    assert "KeyError" in output and "not ours" in output
    result, output = run(shell, capsys, "%%watch_inplace\nimport torch\ntorch.ones(2) @ torch.ones(3)")
    assert "RuntimeError" in output and "same number of elements" in output
    assert "Backward needs" not in output
    # the handler is removed again: a plain cell's version error gets IPython's usual traceback
    result, output = run(shell, capsys, BUGGY_CELL)
    assert "Traceback" in output or "---->" in output or "Cell In[" in output
    assert "Backward needs" not in output


def test_the_watch_magic_checks_its_arguments(shell, capsys):
    result, output = run(shell, capsys, "%%watch_inplace --bogus\nx = 1")
    assert "ValueError" in output and "--max-records" in output
    result, output = run(shell, capsys, "%%watch_inplace --max-records 5\nimport torch\ny = torch.zeros(2).add_(1)")
    assert result.success and output.strip() == ""


def test_the_memory_magic_reports_allocated_peak_and_the_timeline(shell, capsys):
    result, output = run(
        shell, capsys, "%%measure_memory\nimport torch\nbig = torch.zeros(1000, 1000)\ntmp = big.clone()\ndel tmp\n"
    )
    assert result.success
    assert "memory (cpu): allocated 4,000,000 B (3.81 MiB), peak 8,000,000 B (7.63 MiB)" in output
    # the timeline, whose text is its summary (issue 22: no "<Figure size …>"), then its summary under the picture
    assert "<Figure" not in output and output.count("cell: 2 ops, peak 8,000,000 B") == 2
    result, output = run(shell, capsys, "%%measure_memory cpu --no-plot\nimport torch\nsmall = torch.ones(10)\n")
    assert "allocated 40 B, peak 40 B" in output and "<Figure" not in output
    result, output = run(shell, capsys, "%%measure_memory cpu cuda\nx = 1")
    assert "ValueError" in output and "at most one device" in output
    result, output = run(shell, capsys, "%%measure_memory tpu\nx = 1")
    assert "ValueError" in output


def test_measure_memory_magic_says_one_op_and_what_it_could_not_count(shell, capsys):
    source = (
        "%%measure_memory --no-plot\nimport threading\nimport torch\nkept = []\n"
        "worker = threading.Thread(target=lambda: kept.append(torch.ones(1000)))\n"
        "worker.start()\nworker.join()\ny = torch.ones(3)\n"
    )
    result, output = run(shell, capsys, source)
    assert result.success
    assert ", 1 op" in output and "1 ops" not in output
    assert "unseen:" in output and "thread" in output


def test_watch_magic_shows_other_errors_without_the_watchers_frames(shell, capsys):
    result, output = run(shell, capsys, "%%watch_inplace\nimport torch\ntorch.ones(2) @ torch.ones(3)")
    assert "same number of elements" in output
    assert "inplace_watch.py" not in output and "_ops.py" not in output


def test_watch_magic_refuses_max_records_0(shell, capsys):
    result, output = run(shell, capsys, "%%watch_inplace --max-records 0\nx = 1")
    assert "ValueError" in output and "max_records must be at least 1, got 0" in output


def test_watch_magic_says_the_forward_ran_in_an_earlier_cell(shell, capsys):
    cell = "%%watch_inplace\nimport torch\na = torch.ones(3, requires_grad=True)\nb = a.sigmoid()\nb.mul_(2)\n"
    assert run(shell, capsys, cell)[0].success
    result, output = run(shell, capsys, "%%watch_inplace\nb.sum().backward()\n")
    assert "Backward needs" in output and "no watch_inplace was on" not in output
    assert "the forward pass ran outside this watch_inplace block: in an earlier block or cell" in output


def test_memory_magic_counts_a_del_of_an_older_tensor(shell, capsys):
    assert run(shell, capsys, "import torch\nold = torch.ones(1000)\n")[0].success
    result, output = run(shell, capsys, "%%measure_memory --no-plot\ndel old\n")
    assert "allocated -4,000 B (-3.91 KiB), peak 0 B, 0 ops" in output
    assert "unseen" not in output


def test_running_a_memory_cell_again_counts_the_free_of_its_earlier_result(shell, capsys):
    """Re-running a cell rebinds its names: the tensors of the first run go, as the allocator says (issue 20)."""
    cell = "%%measure_memory --no-plot\nimport torch\nresult = torch.ones(1000) * 2\n"
    first = figures(run(shell, capsys, cell)[1])
    assert first[0] == 4000  # the double is left; the ones are freed
    output = run(shell, capsys, cell)[1]
    # the old result goes when the new one is bound, after both ops: the same peak, and nothing is left
    assert figures(output) == (0, first[1]) and "unseen" not in output


def figures(output):
    """(allocated, peak) in bytes, read from the magic's first line."""
    found = re.search(r"allocated (-?[\d,]+) B.*peak ([\d,]+) B", output)
    return tuple(int(number.replace(",", "")) for number in found.groups())


def test_the_watch_magic_changes_nothing_a_cell_computes_or_prints(shell, capsys):
    tests = str(pathlib.Path(__file__).parent)
    setup = (
        f"import sys\nsys.path.insert(0, {tests!r})\nimport torch\nfrom inplace_programs import digest\n"
        "@torch.compile(backend='aot_eager')\ndef compiled(t):\n    return (t * 2).sin() * t\n"
        "compiled(torch.ones(3, requires_grad=True))\n"
    )
    assert run(shell, capsys, setup)[0].success  # compiled outside any watcher first
    cell = (
        "for seed in range(8):\n    print(seed, digest(seed))\n"
        "a = torch.arange(3.0, requires_grad=True)\nout = compiled(a)\nout.sum().backward()\n"
        "print(out.grad_fn.name(), a.grad.tolist())\n"
    )
    plain_result, plain = run(shell, capsys, cell)
    watched_result, watched = run(shell, capsys, "%%watch_inplace\n" + cell)
    assert plain_result.success and watched_result.success
    assert watched == plain and "CompiledFunctionBackward" in plain


@pytest.mark.filterwarnings("ignore:Error detected in ReluBackward0")  # torch's own, with or without the watcher
def test_the_watch_magic_says_when_torch_compile_raised_the_inplace_error(shell, capsys):
    cell = (
        "%%watch_inplace\nimport torch\nfrom torch import nn\n"
        "model = torch.compile(nn.Sequential(nn.ReLU(), nn.ReLU(inplace=True)), backend='aot_eager')\n"
        "model(torch.randn(2, 3, requires_grad=True))\n"
    )
    result, output = run(shell, capsys, cell)
    assert "is at version 1; expected version 0" in output  # the inner cell failed; IPython showed it
    assert "torch.compile raised autograd's in-place error while it traced" in output
    assert "torch._dynamo.config.disable = True" in output
