"""Load a Python file that is not a package module (the `.ci` scripts, the in-place corpus) as a module."""

import importlib.util
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def load_script(path: Path, name: str | None = None):
    """Execute ``path`` (absolute, or relative to the repository root) as a fresh module named ``name`` (default:
    its file name) and return it."""
    path = ROOT / path
    spec = importlib.util.spec_from_file_location(name or path.stem, path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module
