"""How long the strict nbval run of the course takes, against as many notebooks that only import.

Run: .venv/bin/python benchmarks/bench_nbval.py [--workers N]

Both runs happen here, one after the other, with the same pytest options as `make test` (the nbval
flags, the sanitizer, the gpu-cell plugin): first the course's notebooks, then the same number of
throw-away notebooks whose only code cell is ``import torch, tutorial_lib``. The baseline is what any
notebook suite on this stack pays (a kernel start, importing torch); the ratio is the course's cost on
top of it. Per-notebook seconds come from pytest's JUnit XML (the sum of each notebook's cell items).

The throw-away notebooks are written into a temporary folder inside the repository, so that pytest finds the
project's configuration and gives every cell its own node id. (From a folder outside it, every cell's node id
was ``::Cell 0``; pytest-xdist then ran one notebook instead of eight, and a baseline measured that way was far
too fast.) Each run must report one passed or skipped item per code cell, or the benchmark stops.
"""

from __future__ import annotations

import argparse
import re
import subprocess
import sys
import tempfile
import time
import xml.etree.ElementTree as ET
from collections import defaultdict
from pathlib import Path

import nbformat

ROOT = Path(__file__).resolve().parents[1]
NBVAL_FLAGS = [
    "-p",
    "nbval_gpu",
    "--nbval",
    "--nbval-current-env",
    "--nbval-sanitize-with",
    str(ROOT / "tests" / "nbval_sanitize.cfg"),
    "-p",
    "no:cacheprovider",
    "-q",
]


def code_cells(paths: list[Path]) -> int:
    return sum(cell.cell_type == "code" for path in paths for cell in nbformat.read(path, as_version=4).cells)


def run_pytest(paths: list[Path], workers: int, junit: Path) -> float:
    """Wall seconds of one pytest run over ``paths``; stops if any cell fails or any cell was not run."""
    distribution = ["-p", "no:xdist"] if workers == 1 else ["-n", str(workers), "--dist", "loadscope"]
    command = [
        sys.executable,
        "-m",
        "pytest",
        "-o",
        "addopts=",
        *distribution,
        *NBVAL_FLAGS,
        f"--junitxml={junit}",
        *map(str, paths),
    ]
    start = time.perf_counter()
    result = subprocess.run(command, cwd=ROOT, capture_output=True, text=True)
    seconds = time.perf_counter() - start
    if result.returncode != 0:
        sys.exit(f"nbval failed ({result.returncode}):\n{result.stdout[-3000:]}")
    cases = list(ET.parse(junit).getroot().iter("testcase"))
    names = {(case.get("classname"), case.get("name")) for case in cases}
    expected = code_cells(paths)
    if len(cases) != expected or len(names) != len(cases):
        sys.exit(
            f"expected {expected} distinct cell items, pytest reported {len(cases)} "
            f"({len(names)} distinct):\n{result.stdout[-3000:]}"
        )
    return seconds


def per_notebook(junit: Path) -> dict[str, float]:
    seconds: dict[str, float] = defaultdict(float)
    for case in ET.parse(junit).getroot().iter("testcase"):
        # classname is the notebook's path with dots for slashes: notebooks.01_read_storage_and_strides.ipynb
        name = re.sub(r"^.*?\.(?=[^.]+\.ipynb$)", "", case.get("classname", ""))
        seconds[name] += float(case.get("time", 0))
    return dict(seconds)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--workers", type=int, default=2, help="pytest-xdist workers (make test uses 2)")
    args = parser.parse_args()

    course = sorted((ROOT / "notebooks").glob("*.ipynb"))
    with tempfile.TemporaryDirectory(dir=ROOT, prefix=".bench_nbval_") as tmp:
        tmp = Path(tmp)
        baseline = []
        for i in range(len(course)):
            path = tmp / f"import_only_{i:02d}.ipynb"
            notebook = nbformat.v4.new_notebook()
            notebook.cells = [nbformat.v4.new_code_cell("import torch, tutorial_lib", execution_count=1)]
            notebook.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3", "language": "python"}
            nbformat.write(notebook, path)
            baseline.append(path)
        course_seconds = run_pytest(course, args.workers, tmp / "course.xml")
        base_seconds = run_pytest(baseline, args.workers, tmp / "baseline.xml")
        cells = per_notebook(tmp / "course.xml")

    print(f"nbval, {len(course)} notebooks, {args.workers} worker(s)")
    print(f"{'run':<44} {'wall s':>8}")
    print(f"{'course notebooks':<44} {course_seconds:>8.1f}")
    print(f"{'import-only notebooks (same number)':<44} {base_seconds:>8.1f}")
    print(f"{'ratio':<44} {course_seconds / base_seconds:>8.2f}")
    print()
    print(f"{'notebook (sum of its cells; the first includes the kernel start)':<66} {'s':>6}")
    for name, seconds in sorted(cells.items()):
        print(f"{name:<66} {seconds:>6.1f}")


if __name__ == "__main__":
    main()
