"""The project's own files agree with each other: pins, environment.yml, CI entry point, import hygiene."""

import re
import subprocess
import sys
import tomllib
from pathlib import Path

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


def test_public_api_is_exported():
    import tutorial_lib

    for name in (
        "shares_memory",
        "same_storage",
        "layout",
        "trace_ops",
        "measure_memory",
        "autograd_graph",
        "inplace_hazards",
        "view_or_copy",
    ):
        assert callable(getattr(tutorial_lib, name)), name
    assert set(tutorial_lib.__all__) <= set(dir(tutorial_lib))


def load_setup_cell_module():
    import importlib.util

    spec = importlib.util.spec_from_file_location("setup_cell", ROOT / ".ci" / "setup_cell.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_every_notebook_starts_with_the_colab_setup_cell():
    import nbformat

    setup_cell = load_setup_cell_module()
    expected = setup_cell.setup_source()
    assert pyproject()["project"]["urls"]["Source"] in expected
    notebooks = sorted((ROOT / "notebooks").glob("*.ipynb"))
    assert notebooks
    for path in notebooks:
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
        assert f"make {target}" in guide or target == "test"
        assert f"\n{target}:" in makefile
