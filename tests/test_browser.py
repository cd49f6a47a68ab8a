"""Every notebook, run in JupyterLab in a real browser (Debian's chromium, headless, driven by Playwright).

For each notebook in notebooks/ the test does what a learner does: open it in JupyterLab, clear all
outputs, Run All, and wait for the kernel to go idle. Then it checks, in the page:

- Run All reached the end: every non-empty code cell ran.
- The only error outputs are in cells tagged ``raises-exception`` (JupyterLab, like nbval, keeps running
  after those; any other error stops Run All for a learner).
- Every widget output rendered: widget DOM is there with a height, and nothing on the page says
  "Error displaying widget" (nor still "Loading widget...").
- Every figure output is an image the browser loaded, and every cell that shows a figure in the committed
  notebook shows one here too.
- Every explorer (a widget output with a picture: the SVG of ``StrideExplorer`` / ``ViewCopyExplorer``, the
  image of ``GraphStepper``) reacts: the test moves its slider a step, or presses Next (Back when the notebook
  already stepped it to the end), or picks other entries of its dropdown, until the picture changes (SVG markup
  or image bytes compared before and after); if none does, it fails and quotes the explorer's ⚠ message.
  The explorer is in the state the notebook's later cells left it in, as a learner finds it after Run All.

Cells tagged ``gpu`` are run, not skipped. nbval skips them without CUDA (tests/nbval_gpu.py) because their
stored outputs come from a GPU; here nothing is compared, and a learner without a GPU who presses Run All runs
them too. Each one checks ``torch.cuda.is_available()`` and prints what it would show, so on a CPU machine it
must finish without an error like any other cell: an unguarded one would stop Run All for that learner, and
this test says so (it names the cell and its tag). On a machine with CUDA they run for real.

JupyterLab serves copies of the notebooks from a temporary folder (nothing is ever saved into notebooks/, and
the test asserts each committed file is byte for byte what it was). A full-page screenshot of each notebook,
taken after the run and the explorer moves (also when a check fails), goes to test-artifacts/browser/, with
each explorer before and after its move, the server log, the page's console errors if any, and one summary line
per notebook (summary.txt; also printed at the end of the pytest run, by tests/conftest.py).

Without Playwright or chromium the tests are skipped with the reason (BROWSER_TEST_REQUIRED=1 makes that a
failure instead, as the GitHub workflow does).
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import time
from dataclasses import dataclass
from pathlib import Path

import pytest
from browser_lab import (
    CHROMIUM,
    CLOSE,
    PICTURE_DIGEST,
    READ_NOTEBOOK,
    RUN_ALL,
    SCREENSHOT_LAYOUT,
    WAIT_FOR_WIDGETS,
    LabServer,
    missing_browser,
)
from scripts import course_notebooks

ROOT = Path(__file__).resolve().parents[1]
NOTEBOOK_DIR = ROOT / "notebooks"
NOTEBOOKS = [p.relative_to(NOTEBOOK_DIR).as_posix() for p in course_notebooks()]
ARTIFACTS = ROOT / "test-artifacts" / "browser"
WIDGET_MIME = "application/vnd.jupyter.widget-view+json"
FIGURE_MIMES = ("image/png", "image/jpeg", "image/svg+xml")
RUN_TIMEOUT_S = 300
VIEWPORT = {"width": 1280, "height": 900}
#: The tallest screenshot taken, in pixels (the course's longest notebook is about 20,000); past it a
#: notebook's screenshot is cut off, and its summary line says so.
MAX_SCREENSHOT_HEIGHT = 40000


@dataclass
class Lab:
    server: LabServer
    page: object
    console: list
    committed: dict  # notebook name -> its JSON when the test began (what JupyterLab serves a copy of)


def sha256(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


@pytest.fixture(scope="module")
def lab(tmp_path_factory):
    reason = missing_browser()
    if reason:
        if os.environ.get("BROWSER_TEST_REQUIRED") == "1":
            pytest.fail(f"BROWSER TEST CANNOT RUN (BROWSER_TEST_REQUIRED=1): {reason}", pytrace=False)
        pytest.skip(f"BROWSER TEST SKIPPED, notebooks NOT checked in JupyterLab: {reason}")
    from playwright.sync_api import sync_playwright

    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    for old in [*ARTIFACTS.glob("*.png"), ARTIFACTS / "console.log"]:
        old.unlink(missing_ok=True)
    (ARTIFACTS / "summary.txt").write_text("")
    workdir = tmp_path_factory.mktemp("jupyterlab")
    with LabServer(NOTEBOOK_DIR, workdir, ARTIFACTS / "jupyterlab.log") as server, sync_playwright() as playwright:
        committed = {name: json.loads((server.notebook_dir / name).read_text()) for name in NOTEBOOKS}
        browser = playwright.chromium.launch(executable_path=CHROMIUM)
        try:
            page = browser.new_page(viewport=VIEWPORT)
            console = []
            page.on("console", lambda m: console.append(f"console.{m.type}: {m.text}") if m.type == "error" else None)
            page.on("pageerror", lambda error: console.append(f"page error: {error}"))
            page.goto(f"{server.url}/lab?reset", timeout=120_000)
            page.wait_for_function("() => window.jupyterapp !== undefined", timeout=120_000)
            page.evaluate("() => window.jupyterapp.restored")
            yield Lab(server, page, console, committed)
        finally:
            browser.close()


def tags(cell) -> list:
    return cell.get("metadata", {}).get("tags", [])


def text(value) -> str:
    return "".join(value) if isinstance(value, list) else value


def figure_count(cell) -> int:
    return sum(1 for o in cell.get("outputs", []) if any(m in o.get("data", {}) for m in FIGURE_MIMES))


def check_errors(code, problems: list) -> tuple[int, int]:
    """Error outputs: (unexpected, expected); each unexpected one is added to ``problems``."""
    errors = expected = 0
    for i, cell in code:
        for output in cell.get("outputs", []):
            if output["output_type"] != "error":
                continue
            if "raises-exception" in tags(cell):
                expected += 1
                continue
            errors += 1
            tagged = f" (tags: {', '.join(tags(cell))})" if tags(cell) else ""
            hint = (
                " -- a gpu cell must check torch.cuda.is_available(): without CUDA this stops Run All"
                if "gpu" in tags(cell)
                else " -- only cells tagged raises-exception may raise"
            )
            problems.append(f"cell {i}{tagged} raised {output['ename']}: {output['evalue'][:300]}{hint}")
    return errors, expected


def check_widgets(code, dom: dict, problems: list) -> tuple[int, list]:
    """Every widget output must have rendered. Returns (widget outputs, (cell, output) indices of the rendered)."""
    widgets, rendered = 0, []
    for i, cell in code:
        for j, output in enumerate(cell.get("outputs", [])):
            if WIDGET_MIME not in output.get("data", {}):
                continue
            widgets += 1
            facts = dom.get((i, j))
            if facts is None or not facts["widget"] or facts["widget_height"] <= 0:
                problems.append(f"cell {i}: widget output {j} did not render (no widget DOM): {facts}")
            elif facts["widget_error"]:
                problems.append(f"cell {i}: widget output {j} says: {facts['widget_text'][:200]!r}")
            else:
                rendered.append((i, j))
    return widgets, rendered


def check_figures(code, committed_cells: list, dom: dict, problems: list) -> int:
    """Every figure output must be an image the page loaded, and every cell the committed notebook shows a figure
    in must show one here (outside ``gpu`` cells, whose figures need CUDA). Returns the number of figures."""
    figures = 0
    for i, cell in code:
        for j, output in enumerate(cell.get("outputs", [])):
            data = output.get("data", {})
            if not any(m in data for m in FIGURE_MIMES) or WIDGET_MIME in data:
                continue
            figures += 1
            facts = dom.get((i, j)) or {}
            if not (facts.get("images_loaded") or facts.get("svgs")):
                problems.append(f"cell {i}: figure output {j} is not a loaded image in the page: {facts}")
        if figure_count(committed_cells[i]) and not figure_count(cell) and "gpu" not in tags(cell):
            problems.append(f"cell {i}: the committed notebook shows a figure here, the browser none")
    return figures


def explorer_moves(output):
    """What a learner would touch, in order, as (description, action): the slider one step each way, Next or Back,
    then other entries of each dropdown. The first that changes the picture is the one that counts."""
    slider = output.locator(".noUi-handle, input[type=range]")
    if slider.count():
        yield "moved its slider one step right", lambda: (slider.first.focus(), slider.first.press("ArrowRight"))
        yield "moved its slider one step left", lambda: (slider.first.focus(), slider.first.press("ArrowLeft"))
    for label in ("Next", "Back"):  # a stepper the notebook already ran to its last step only goes back
        button = output.get_by_role("button", name=re.compile(label))
        if button.count() and button.first.is_enabled():
            yield f"pressed {label}", button.first.click
    dropdowns = output.locator("select")
    for d in range(dropdowns.count()):
        dropdown = dropdowns.nth(d)
        options = dropdown.locator("option").all_inner_texts()
        current = dropdown.evaluate("s => s.selectedIndex")
        for step in range(1, min(len(options), 4)):
            choice = (current + step) % len(options)
            yield f"picked {options[choice]!r} in its dropdown", lambda c=choice, d=dropdown: d.select_option(index=c)


def move_explorer(page, output, where: str, shots: str) -> str | None:
    """Move one control of a widget output with a picture; None if the picture changed, else what went wrong.

    Screenshots of the widget before and after go to ``{shots}-before.png`` and ``{shots}-after.png``.
    """
    output.screenshot(path=f"{shots}-before.png")
    before = output.evaluate(PICTURE_DIGEST)["digest"]
    tried = []
    for action, move in explorer_moves(output):
        move()
        tried.append(action)
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline:
            after = output.evaluate(PICTURE_DIGEST)
            if after["digest"] != before and after["pictures"]:
                output.screenshot(path=f"{shots}-after.png")
                return None
            page.wait_for_timeout(200)
    output.screenshot(path=f"{shots}-after.png")
    if not tried:
        return f"{where}: a widget with a picture but no slider, Next/Back button or dropdown to move"
    says = [line for line in output.inner_text().splitlines() if "⚠" in line][:1]
    return f"{where}: {'; '.join(tried)}, and its picture did not change" + (
        f" (the explorer says: {says[0][:200]})" if says else ""
    )


def make_page_as_tall_as_the_notebook(page) -> bool:
    """Simple interface, no side bars, and a viewport as tall as the notebook (so nothing scrolls inside it).

    Returns True when the notebook is taller than ``MAX_SCREENSHOT_HEIGHT`` (the page is cut off there).
    """
    height = page.evaluate(SCREENSHOT_LAYOUT)
    page.set_viewport_size(
        {"width": VIEWPORT["width"], "height": max(VIEWPORT["height"], min(height, MAX_SCREENSHOT_HEIGHT))}
    )
    page.wait_for_timeout(300)
    return height > MAX_SCREENSHOT_HEIGHT


def screenshot(page, path: Path) -> bool:
    """The whole notebook in one picture. Returns True when it was cut off at ``MAX_SCREENSHOT_HEIGHT``."""
    cut_off = make_page_as_tall_as_the_notebook(page)
    page.screenshot(path=str(path))
    return cut_off


@pytest.mark.slow
@pytest.mark.parametrize("name", NOTEBOOKS)
def test_notebook_runs_in_jupyterlab(lab, name, record_property):
    page = lab.page
    digest = sha256(NOTEBOOK_DIR / name)
    start = time.monotonic()
    lab.console.clear()
    problems = []
    summary = f"{name}: did not finish"
    shot = ARTIFACTS / f"{Path(name).stem}.png"
    try:
        run = page.evaluate(RUN_ALL, {"path": name, "timeoutMs": RUN_TIMEOUT_S * 1000})
        assert run["cleared_outputs"] == 0, f"{name}: Clear All Outputs left {run['cleared_outputs']} outputs"
        if run["timed_out"]:
            problems.append(f"Run All did not finish within {RUN_TIMEOUT_S} s (kernel still busy)")
        widgets_settled = page.evaluate(WAIT_FOR_WIDGETS, 30_000)
        seen = page.evaluate(READ_NOTEBOOK)
        notebook = seen["notebook"]
        dom = {(i, j): facts for i, j, facts in seen["outputs"]}
        cells = notebook["cells"]
        committed_cells = lab.committed[name]["cells"]
        assert len(cells) == len(committed_cells), (
            f"{name}: JupyterLab shows {len(cells)} cells, the file has {len(committed_cells)}"
        )

        code = [(i, c) for i, c in enumerate(cells) if c["cell_type"] == "code"]
        cells_run = sum(1 for _, c in code if c.get("execution_count") is not None)
        not_run = [i for i, c in code if text(c["source"]).strip() and c.get("execution_count") is None]
        if not_run:
            problems.append(f"Run All stopped: cells {not_run} never ran")
        errors, expected_errors = check_errors(code, problems)
        widgets, widget_outputs = check_widgets(code, dom, problems)
        if seen["page_says_error_displaying_widget"]:
            problems.append("the page says 'Error displaying widget'")
        if not widgets_settled:
            problems.append("a widget still says 'Loading widget...' after 30 s")
        figures = check_figures(code, committed_cells, dom, problems)

        explorers = explorers_moved = 0
        if widget_outputs:
            make_page_as_tall_as_the_notebook(page)  # widget screenshots whole, not clipped by the notebook's scroller
        for i, j in widget_outputs:
            output = page.locator(f'[data-test-output="{i}:{j}"] .jp-OutputArea-output').first
            if not output.evaluate(PICTURE_DIGEST)["pictures"]:
                continue  # a widget without a picture: rendering is all there is to check
            explorers += 1
            trouble = move_explorer(
                page, output, f"cell {i}, explorer", str(ARTIFACTS / f"{Path(name).stem}-cell{i}-explorer")
            )
            if trouble:
                problems.append(trouble)
            else:
                explorers_moved += 1

        seconds = time.monotonic() - start
        summary = (
            f"{name}: {cells_run} cells run, {errors} errors ({expected_errors} expected), "
            f"{widgets} widgets, {figures} figures, explorers moved {explorers_moved}/{explorers}, "
            f"{seconds:.1f} s"
        )
    finally:
        try:
            if screenshot(page, shot):
                summary += f" (screenshot cut off at {MAX_SCREENSHOT_HEIGHT} px)"
        finally:
            page.set_viewport_size(VIEWPORT)
            page.evaluate(CLOSE)
        if lab.console:
            with (ARTIFACTS / "console.log").open("a") as log:
                log.write(f"== {name}\n" + "\n".join(lab.console) + "\n")
        with (ARTIFACTS / "summary.txt").open("a") as out:
            out.write(summary + ("" if not problems else f"  [{len(problems)} problems]") + "\n")
        print(summary)
        record_property("browser_summary", summary)

    # JupyterLab only ever sees the copies, so this holds by construction; checked all the same (when someone edits
    # the notebook while the test runs, this fails too: run it again).
    assert sha256(NOTEBOOK_DIR / name) == digest, f"{name}: notebooks/{name} changed while the test ran it"
    assert not problems, f"{name} in JupyterLab (screenshot: {os.path.relpath(shot, ROOT)}):\n" + "\n".join(
        f"- {p}" for p in problems
    )
