"""The project's own files agree with each other: pins, environment.yml, CI entry point, import hygiene."""

import re
import subprocess
import sys
import tomllib
from pathlib import Path

from scripts import course_notebooks

ROOT = Path(__file__).resolve().parents[1]


def pyproject():
    return tomllib.loads((ROOT / "pyproject.toml").read_text())


def pins(requirements):
    """{'torch': '2.13.0', ...} from 'name==version' strings; fails on anything not pinned exactly."""
    pinned = {}
    for requirement in requirements:
        match = re.fullmatch(r"([A-Za-z0-9_.\-]+)==([A-Za-z0-9_.+]+)", requirement.strip())
        assert match, f"not pinned exactly: {requirement!r}"
        pinned[match.group(1).lower()] = match.group(2)
    return pinned


def environment_pip_lines():
    """The entries of environment.yml's pip: section (a tiny reader: the file is flat and ours)."""
    lines, inside = [], False
    for raw in (ROOT / "environment.yml").read_text().splitlines():
        stripped = raw.strip()
        if stripped.startswith("- pip:"):
            inside = True
            continue
        if inside and stripped.startswith("- "):
            lines.append(stripped[2:].strip())
        elif inside and stripped and not stripped.startswith("#"):
            break
    return lines


def test_every_dependency_is_pinned_and_torch_is_the_cpu_release():
    project = pyproject()["project"]
    runtime = pins(project["dependencies"])
    assert runtime["torch"] == "2.13.0"
    for name in ("numpy", "matplotlib", "ipywidgets", "jupyterlab", "nbval"):
        assert name in runtime, f"{name} must be pinned in pyproject.toml"
    assert runtime["ipywidgets"].startswith("8.") and runtime["jupyterlab"].startswith("4.")
    assert runtime["nbval"].startswith("0.11")
    test_extra = pins(project["optional-dependencies"]["test"])
    assert {"pytest", "pytest-xdist", "hypothesis", "playwright"} <= set(test_extra)


def test_environment_yml_agrees_with_pyproject():
    text = (ROOT / "environment.yml").read_text()
    assert "conda-forge" in text and "nodefaults" in text
    assert re.search(r"^\s*- python=3\.11\s*$", text, re.MULTILINE)
    entries = environment_pip_lines()
    assert "-e ." in entries, "environment.yml must install tutorial_lib itself (pip: -e .)"
    conda_pins = pins(e for e in entries if "==" in e)
    project = pyproject()["project"]
    expected = pins(project["dependencies"]) | pins(project["optional-dependencies"]["test"])
    assert conda_pins == expected


def test_installed_versions_are_the_pinned_ones():
    from importlib.metadata import version

    for name, pinned in pins(pyproject()["project"]["dependencies"]).items():
        assert version(name).split("+")[0] == pinned, name


def test_ci_runs_make_test_and_nothing_else():
    commands = [
        line.strip()
        for line in (ROOT / ".ci" / "run").read_text().splitlines()
        if line.strip() and not line.strip().startswith("#")
    ]
    assert commands[-1] == "make test"
    assert all(c.startswith(("set ", "cd ", "make test")) for c in commands)
    makefile = (ROOT / "Makefile").read_text()
    assert re.search(r"^lab:", makefile, re.MULTILINE) and re.search(r"^test:", makefile, re.MULTILINE)
    readme = (ROOT / "README.md").read_text()
    assert readme.index("make lab") < readme.index("conda env create -f environment.yml")
    assert "make test" in readme


def test_github_workflow_runs_make_test_and_keeps_the_screenshots():
    """A fork gets the project's CI: `make test` on push, pull request and weekly, on Debian with the CPU torch,
    the browser test required, and the screenshots uploaded even when a test fails."""
    text = (ROOT / ".github" / "workflows" / "ci.yml").read_text()
    for event in ("push:", "pull_request:", "schedule:", "cron:"):
        assert re.search(rf"^\s+-?\s*{event}", text, re.MULTILINE), event
    assert re.search(r"^\s+run: make test\s*$", text, re.MULTILINE)
    assert re.search(r"^\s+container: python:3\.11-bookworm\s*$", text, re.MULTILINE)
    assert "PIP_EXTRA_INDEX_URL: https://download.pytorch.org/whl/cpu" in text
    assert re.search(r"BROWSER_TEST_REQUIRED: \"1\"", text)
    upload = text[text.index("actions/upload-artifact") :]
    assert re.search(r"^\s+path: test-artifacts/browser/?\s*$", upload, re.MULTILINE)
    assert "if: always()" in text[: text.index("actions/upload-artifact")].rsplit("- name:", 1)[-1]
    assert "test-artifacts/" in (ROOT / ".gitignore").read_text().splitlines()


def test_import_is_fast_and_has_no_side_effects():
    code = (
        "import sys, matplotlib as m0\n"
        "before = dict(m0.rcParams)\n"
        "import torch\n"
        "seed_before = torch.initial_seed()\n"
        "limit = sys.getrecursionlimit()\n"
        "del sys.modules['matplotlib']\n"
        "import tutorial_lib\n"
        "assert 'matplotlib' not in sys.modules, 'tutorial_lib imported matplotlib'\n"
        "assert 'ipywidgets' not in sys.modules, 'tutorial_lib imported ipywidgets'\n"
        "assert sys.getrecursionlimit() == limit\n"
        "assert torch.initial_seed() == seed_before\n"
        "assert dict(m0.rcParams) == before\n"
    )
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert result.returncode == 0, result.stderr
    assert result.stdout == "" and "Warning" not in result.stderr


NOTEBOOKS = course_notebooks()


def notebook_code():
    """The source of every code cell of every notebook, joined."""
    import nbformat

    cells = [cell for path in NOTEBOOKS for cell in nbformat.read(path, as_version=4).cells]
    return "\n".join(cell.source for cell in cells if cell.cell_type == "code")


def names_used_as_tl_attributes(source):
    """Every ``name`` in ``tl.name`` in ``source``."""
    return set(re.findall(r"\btl\.([A-Za-z_]\w*)", source))


def names_the_tests_take_from_tutorial_lib():
    """Every ``tl.name`` in the tests, and every name they import from ``tutorial_lib`` or one of its modules."""
    import ast

    names = set()
    for path in (ROOT / "tests").glob("*.py"):
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) and node.value.id == "tl":
                names.add(node.attr)
            elif isinstance(node, ast.ImportFrom) and (node.module or "").split(".")[0] == "tutorial_lib":
                names.update(alias.name for alias in node.names)
    return names


def test_every_name_the_notebooks_use_is_exported():
    import tutorial_lib

    used = names_used_as_tl_attributes(notebook_code())
    assert used, "no notebook uses tl.<name>: is the pattern still right?"
    assert used <= set(tutorial_lib.__all__), sorted(used - set(tutorial_lib.__all__))
    for name in tutorial_lib.__all__:
        assert hasattr(tutorial_lib, name), name


def test_every_exported_name_is_used_by_a_notebook_a_test_or_the_readme():
    """An export nobody uses or names is dead API: use it, document it in README.md, or stop exporting it."""
    import tutorial_lib

    used = names_used_as_tl_attributes(notebook_code()) | names_the_tests_take_from_tutorial_lib()
    readme = (ROOT / "README.md").read_text()
    unused = [name for name in tutorial_lib.__all__ if name not in used and not re.search(rf"`(tl\.)?{name}\b", readme)]
    assert unused == []


def test_exported_result_types_are_what_the_public_functions_return():
    """The classes exported only so that a learner can name what a function gave them."""
    import torch

    import tutorial_lib as tl

    with tl.trace_ops() as ops:
        torch.ones(2).mul(2)
    assert [type(op) for op in ops] == [tl.OpRecord, tl.OpRecord]
    x = torch.ones(3, requires_grad=True)
    with tl.watch_inplace() as watch:
        y = (x * 1).exp()  # ExpBackward0 saves its result
        y.add_(1)
    assert isinstance(watch, tl.InplaceWatch)
    (write,) = watch.writes
    assert isinstance(write, tl.InplaceWrite) and isinstance(write.line, tl.SourceLine)
    (explanation,) = tl.explain_inplace(y)
    assert isinstance(explanation, tl.InplaceExplanation)
    saved = [saved for node in tl.autograd_graph(y).nodes for saved in node.saved]
    assert saved and all(isinstance(one, tl.SavedTensor) for one in saved)
    assert isinstance(tl.show_error(lambda: y.sum().backward()), tl.ErrorReport)
    assert isinstance(tl.check("ch1.predict_strides", ...), tl.Feedback)
    assert isinstance(tl.layout(x), tl.Layout)


def load_setup_cell_module():
    from scripts import load_script

    return load_script(Path(".ci/setup_cell.py"))


def test_every_notebook_starts_with_the_colab_setup_cell():
    import nbformat

    setup_cell = load_setup_cell_module()
    expected = setup_cell.setup_source()
    assert pyproject()["project"]["urls"]["Source"] in expected
    assert NOTEBOOKS
    for path in NOTEBOOKS:
        notebook = nbformat.read(path, as_version=4)
        first = next(cell for cell in notebook.cells if cell.cell_type == "code")
        assert first.source == expected, f"{path.name}: first code cell is not the setup cell (run make notebooks)"
        assert "setup" in first.metadata.get("tags", []), path.name
        assert first.outputs == [], f"{path.name}: the setup cell must print nothing in the course environment"


def test_setup_cell_installs_only_when_tutorial_lib_is_missing():
    """Run the cell's code with a recording get_ipython: here it must do nothing; without the library, one pip call."""
    setup_cell = load_setup_cell_module()
    calls = []

    class FakeShell:
        def run_line_magic(self, name, line):
            calls.append((name, line))

    code = setup_cell.setup_source()
    exec(compile(code, "setup", "exec"), {"get_ipython": FakeShell})
    assert calls == []

    import importlib.util

    real = importlib.util.find_spec
    importlib.util.find_spec = lambda name, *a: None if name == "tutorial_lib" else real(name, *a)
    try:
        exec(compile(code, "setup", "exec"), {"get_ipython": FakeShell})
    finally:
        importlib.util.find_spec = real
    assert calls == [("pip", "install --quiet --no-deps git+" + pyproject()["project"]["urls"]["Source"])]


def test_instructors_guide_lists_every_misconception_and_make_targets():
    import nbformat

    guide = (ROOT / "INSTRUCTORS.md").read_text()
    for path in sorted((ROOT / "notebooks").glob("0[1-7]_*.ipynb")):
        inside = False
        claims = []
        for cell in nbformat.read(path, as_version=4).cells:
            if cell.cell_type != "markdown":
                continue
            for line in cell.source.splitlines():
                if line.startswith("## "):
                    inside = "misconception" in line.lower()
                elif inside and line.startswith("### "):
                    claims.append(line[4:])
        assert len(claims) >= 3, path.name
        for claim in claims:
            assert f"| {path.name[:2]} | {claim} |" in guide, f"INSTRUCTORS.md misses {path.name[:2]}: {claim}"
    makefile = (ROOT / "Makefile").read_text()
    for target in ("lab", "test", "html", "reset-exercises"):
        assert f"make {target}" in guide, target
        assert f"\n{target}:" in makefile
