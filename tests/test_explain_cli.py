"""python -m tutorial_lib.explain script.py [args ...], run in a subprocess."""

from __future__ import annotations

import os
import pathlib
import subprocess
import sys

import pytest

from tutorial_lib.explain import main

ROOT = pathlib.Path(__file__).resolve().parent.parent
CORPUS = pathlib.Path(__file__).parent / "inplace_corpus"

SCRIPT = """\
import sys
import torch

a = torch.randn(3, requires_grad=True)
e = a.exp()
if "break" in sys.argv[1:]:
    e.mul_(2)
e.sum().backward()
print("finished", sys.argv[1:])
if "exit7" in sys.argv[1:]:
    sys.exit(7)
if "other" in sys.argv[1:]:
    raise KeyError("not the version error")
"""


def explain(*args, cwd=ROOT, **variables):
    environment = {**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")]))}
    environment.update(variables)
    return subprocess.run(
        [sys.executable, "-m", "tutorial_lib.explain", *map(str, args)],
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=300,
        env=environment,
    )


@pytest.fixture(scope="module")
def script(tmp_path_factory):
    path = tmp_path_factory.mktemp("scripts") / "train.py"
    path.write_text(SCRIPT)
    return path


def test_the_command_explains_the_error_and_exits_1(script):
    done = explain(script, "break")
    assert done.returncode == 1
    assert "RuntimeError: one of the variables needed for gradient computation" in done.stderr
    assert "saved at:     train.py:5  e = a.exp()" in done.stderr
    assert "changed at:   train.py:7  e.mul_(2)   (mul_, version 0 -> 1)" in done.stderr
    assert 'File "' in done.stderr and "site-packages" not in done.stderr  # the script's own frames only


def test_the_command_passes_arguments_and_exit_codes_through(script):
    done = explain(script, "fine")
    assert done.returncode == 0 and "finished ['fine']" in done.stdout and done.stderr == ""
    done = explain(script, "exit7")
    assert done.returncode == 7
    done = explain(script, "other")
    assert done.returncode == 1 and "KeyError: 'not the version error'" in done.stderr
    assert "Backward needs" not in done.stderr


def test_the_command_on_a_corpus_program():
    done = explain(CORPUS / "bug_relu_inplace_module.py")
    assert done.returncode == 1
    assert "saved at:     bug_relu_inplace_module.py:13" in done.stderr
    assert "changed at:   bug_relu_inplace_module.py:14" in done.stderr


def test_bad_command_lines(tmp_path):
    done = explain()
    assert done.returncode == 2 and "usage: python -m tutorial_lib.explain" in done.stderr
    done = explain(tmp_path / "missing.py")
    assert done.returncode == 2 and "no such script" in done.stderr
    with pytest.raises(TypeError, match="argv must be a list of str"):
        main("script.py")


def test_the_clone_advice_for_a_write_through_an_earlier_view_makes_the_script_run(tmp_path):
    lines = [
        "import torch",
        "x = torch.randn(4, requires_grad=True)",
        "y = x.exp()",
        "v = y.view(2, 2)",
        "v.relu_()",
        "y.sum().backward()",
    ]
    path = tmp_path / "view_write.py"
    path.write_text("\n".join(lines) + "\n")
    done = explain(path)
    assert done.returncode == 1
    assert "Clone before the view is taken: y = y.clone() just before line 4 (v = y.view(2, 2))" in done.stderr
    assert "y = y.clone() just before line 5" not in done.stderr  # v would still write into y's old storage
    path.write_text("\n".join([*lines[:3], "y = y.clone()", *lines[3:]]) + "\n")  # before the view is taken
    done = explain(path)
    assert done.returncode == 0, done.stderr


def test_other_errors_show_the_scripts_frames_only_and_interrupts_exit_130(tmp_path):
    path = tmp_path / "other.py"
    path.write_text("import torch\ndef f():\n    return torch.ones(2) @ torch.ones(3)\nf()\n")
    done = explain(path)
    assert done.returncode == 1
    assert done.stderr.startswith("Traceback (most recent call last):\n")
    assert 'other.py", line 4, in <module>' in done.stderr and 'other.py", line 3, in f' in done.stderr
    for library in ("runpy", "explain.py", "inplace_watch.py", "_ops.py"):
        assert library not in done.stderr
    assert done.stderr.rstrip().endswith("but got 2 and 3 elements respectively")
    path.write_text("raise KeyboardInterrupt\n")
    done = explain(path)
    assert done.returncode == 130 and done.stderr.rstrip().endswith("KeyboardInterrupt")
    assert "runpy" not in done.stderr


SAME_RUN = """\
import sys
sys.path.insert(0, {tests!r})
import torch
from inplace_programs import digest

for seed in range(12):  # random programs: prod, cumprod, _foreach_*_ over one tensor twice included
    print(seed, digest(seed))


@torch.compile(backend="aot_eager")
def f(t):
    return (t * 2).sin() * t


a = torch.arange(4.0, requires_grad=True)
out = f(a)
out.sum().backward()
print(out.grad_fn.name(), a.grad.tolist(), __file__ == {path!r})
sys.exit(3)
"""


def test_the_command_changes_nothing_the_script_computes_or_prints(tmp_path):
    path = tmp_path / "same.py"
    path.write_text(SAME_RUN.format(tests=str(pathlib.Path(__file__).parent), path=str(path)))
    plain = subprocess.run([sys.executable, str(path)], cwd=tmp_path, capture_output=True, text=True, timeout=300)
    watched = explain("same.py", cwd=tmp_path)  # a relative path: __file__ is absolute all the same
    assert plain.returncode == watched.returncode == 3, (plain.stderr, watched.stderr)
    assert watched.stdout == plain.stdout
    assert "CompiledFunctionBackward" in plain.stdout and plain.stdout.rstrip().endswith("True")


COMPILE_REFUSES = """\
import torch
from torch import nn

model = torch.compile(nn.Sequential(nn.Linear(3, 4), nn.ReLU(), nn.ReLU(inplace=True)), backend="aot_eager")
print("before")
model(torch.randn(5, 3)).sum().backward()
print("after")
"""


@pytest.mark.slow
def test_a_model_torch_compile_refuses_fails_as_under_python_and_the_notes_command_names_the_lines(tmp_path):
    # torch.compile traces the backward when it compiles: the version error comes in the first call, under python
    # too; the command must not run the model eagerly instead (it did: the script printed "after" and exited 0)
    path = tmp_path / "compiled.py"
    path.write_text(COMPILE_REFUSES)
    plain = subprocess.run([sys.executable, str(path)], cwd=tmp_path, capture_output=True, text=True, timeout=300)
    watched = explain(path)
    assert plain.returncode == watched.returncode == 1
    assert plain.stdout == watched.stdout == "before\n"
    (error,) = [line for line in plain.stderr.splitlines() if line.startswith("RuntimeError: one of the variables")]
    assert error in watched.stderr.splitlines()
    assert "torch.compile raised autograd's in-place error while it traced" in watched.stderr
    assert "TORCH_COMPILE_DISABLE=1 python -m tutorial_lib.explain" in watched.stderr
    uncompiled = explain(path, TORCH_COMPILE_DISABLE="1")  # what the note says to run: the lines, named
    assert uncompiled.returncode == 1 and uncompiled.stdout == "before\n"
    assert "changed at:   compiled.py:6  model(torch.randn(5, 3)).sum().backward()" in uncompiled.stderr
    assert "ReLU(inplace=True)" in uncompiled.stderr
