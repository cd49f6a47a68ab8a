"""Load a Python file that is not a package module (the `.ci` scripts, the in-place corpus) as a module."""

import importlib.util
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def load_script(path: Path, name: str | None = None):
    """Execute ``path`` (absolute, or relative to the repository root) as a fresh module named ``name`` (default:
    its file name) and return it."""
    path = ROOT / path
    if path.parent.name == ".ci" and str(path.parent) not in sys.path:
        sys.path.insert(0, str(path.parent))  # the .ci scripts import each other by name, as they do when run
    spec = importlib.util.spec_from_file_location(name or path.stem, path)
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # dataclasses look their module up there
    spec.loader.exec_module(module)
    return module


def course_notebooks() -> list[Path]:
    """Every notebook of the course: the core path in order, then the deep dives (``.ci/notebook_paths.py``)."""
    return load_script(Path(".ci/notebook_paths.py")).all_notebooks()
