"""The core path fits a one-day workshop: each chapter within its budget, its rule on the first screen, its stated
time the measured one, and every deep dive reachable from the core at the spot where its topic belongs.

The figures come from `.ci/course_stats.py` (`make course-stats`), which implements issue 19's pace formula.
"""

import math
import re
from pathlib import Path

import nbformat
import pytest
from scripts import load_script

ROOT = Path(__file__).resolve().parents[1]
stats = load_script(Path(".ci/course_stats.py"))
paths = load_script(Path(".ci/notebook_paths.py"))
CORE = paths.core_notebooks()
DEEP_DIVES = paths.deep_dives()
LINK = re.compile(r"\]\(([^)\s#]+\.ipynb)(#[^)]*)?\)")


def markdown_notebook(tmp_path, *cells):
    notebook = nbformat.v4.new_notebook(cells=list(cells))
    path = tmp_path / "x.ipynb"
    nbformat.write(notebook, path)
    return path


def test_the_pace_formula_counts_what_issue_19_says(tmp_path):
    setup = nbformat.v4.new_code_cell("import x", metadata={"tags": ["setup"]})
    prose = nbformat.v4.new_markdown_cell(
        "One two three four five six. Seven eight nine ten.\n\n```python\nno words\n```"
    )
    solution = nbformat.v4.new_markdown_cell(
        "<details><summary>Solution</summary>\n\nmany hidden words here\n</details>"
    )
    printing = nbformat.v4.new_code_cell("print(1)")
    printing.outputs = [nbformat.v4.new_output("stream", text="a\nb\n")]
    figure = nbformat.v4.new_code_cell("fig")
    figure.outputs = [nbformat.v4.new_output("display_data", data={"image/png": "", "text/plain": "<Figure>"})]
    stub = nbformat.v4.new_code_cell("answer = ...")
    check = nbformat.v4.new_code_cell('tl.check("ch1.x", answer)')
    guess = nbformat.v4.new_code_cell('# Predict\ntl.check("ch1.y", ...)', metadata={"tags": ["predict", "exercise"]})
    path = markdown_notebook(tmp_path, setup, prose, solution, printing, figure, stub, check, guess)
    counted = stats.notebook_stats(path)
    assert (counted.words, counted.sentences, counted.code_cells) == (10, 2, 5)
    assert (counted.output_lines, counted.displays, counted.exercises, counted.predictions) == (2, 1, 1, 1)
    assert counted.minutes == pytest.approx(10 / 150 + 0.5 * 5 + 0.04 * 2 + 1 + 6 + 1)


def test_a_chapter_over_its_budget_is_reported(tmp_path):
    long_prose = nbformat.v4.new_markdown_cell(" ".join(["word"] * 2600) + ".")
    problems = stats.over_budget(stats.notebook_stats(markdown_notebook(tmp_path, long_prose)))
    assert any("2600 words > 2500" in problem for problem in problems)
    assert any("0 checks" in problem for problem in problems)
    assert any("words per sentence" in problem for problem in problems)


@pytest.mark.parametrize("path", CORE, ids=lambda p: p.stem[:2])
def test_core_chapter_is_within_its_budget(path):
    assert stats.over_budget(stats.notebook_stats(path)) == []


def test_the_core_path_fits_a_day():
    assert len(CORE) >= 8
    assert sum(stats.notebook_stats(path).minutes for path in CORE) <= stats.MAX_CORE_MINUTES


def first_cell(path):
    return next(cell for cell in nbformat.read(path, as_version=4).cells if cell.cell_type == "markdown").source


@pytest.mark.parametrize("path", CORE, ids=lambda p: p.stem[:2])
def test_first_screen_states_the_rule_three_takeaways_at_most_and_the_measured_time(path):
    text = first_cell(path)
    assert text.startswith("# "), "the first cell opens with the chapter's title"
    assert "**The rule.**" in text, "the first screen states the chapter's one rule, after '**The rule.**'"
    takeaways = re.findall(r"^\s*(?:[-*]|\d+\.)\s", text, re.MULTILINE)
    assert 1 <= len(takeaways) <= 3, f"{len(takeaways)} takeaways on the first screen (at most three)"
    assert len(text.splitlines()) <= 20, "the first cell fits one screen"
    stated = re.search(r"About (\d+) minutes", text)
    assert stated, "the first screen says how long the chapter takes ('About N minutes')"
    measured = stats.notebook_stats(path).minutes
    assert int(stated.group(1)) == 5 * math.ceil(measured / 5), f"measured {measured:.1f} min"


def notebook_links(path):
    notebook = nbformat.read(path, as_version=4)
    return [m.group(1) for cell in notebook.cells if cell.cell_type == "markdown" for m in LINK.finditer(cell.source)]


@pytest.mark.parametrize("path", CORE + DEEP_DIVES, ids=lambda p: p.stem)
def test_every_link_to_a_notebook_opens_one(path):
    for target in notebook_links(path):
        assert (path.parent / target).resolve().is_file(), f"{path.name} links to {target}, which does not exist"


def test_every_deep_dive_is_linked_from_the_core_path():
    linked = {(path.parent / target).resolve() for path in CORE for target in notebook_links(path)}
    assert DEEP_DIVES, "notebooks/deep_dives/ holds the depth of the course"
    assert [p.name for p in DEEP_DIVES if p.resolve() not in linked] == []


def stated_minutes(path):
    return int(re.search(r"About (\d+) minutes", first_cell(path)).group(1))


def test_instructors_guide_quotes_each_chapters_stated_time_and_the_totals():
    guide = (ROOT / "INSTRUCTORS.md").read_text()
    for path in CORE:
        row = re.search(rf"^\| `{path.stem}` \|.*\| (\d+) min \|$", guide, re.MULTILINE)
        assert row, f"INSTRUCTORS.md has no row for {path.stem} ending with its time"
        assert int(row.group(1)) == stated_minutes(path), path.stem
    total = sum(stated_minutes(path) for path in CORE)
    assert f"totals {total} minutes as the chapters state them" in guide
    measured = round(sum(stats.notebook_stats(path).minutes for path in CORE))
    assert f"({measured} measured;" in guide
    assert f"**{len(DEEP_DIVES)} deep dives**" in guide


def test_readme_start_here_table_quotes_each_chapters_stated_time():
    readme = (ROOT / "README.md").read_text()
    start = readme.split("## Start here", 1)[1].split("\n## ", 1)[0]
    for path in CORE:
        row = re.search(rf"^\| \[[^]]+\]\(notebooks/{path.name}\) \|.*\| (\d+) min \|$", start, re.MULTILINE)
        assert row, f"README's Start here has no row for {path.name}"
        assert int(row.group(1)) == stated_minutes(path), path.stem
    measured = sum(stats.notebook_stats(path).minutes for path in CORE)
    assert f"Measured now: {round(measured)} minutes, {measured / 60:.1f} hours." in start
    assert f"The {len(DEEP_DIVES)} deep dives" in start


#: The widest picture JupyterLab shows at its own size in the browser test's 1,280-px window (a 1,028-px timeline is
#: shown 1:1, a 1,129-px layout was shrunk to about 94 %, taking its 7-pt text under the floor).
NOTEBOOK_WIDTH_PX = 1040


def test_every_stored_picture_fits_the_notebook_so_its_text_is_not_shrunk():
    too_wide = []
    for path in CORE + DEEP_DIVES:
        for number, cell in enumerate(nbformat.read(path, as_version=4).cells):
            for output in cell.get("outputs", []):
                size = output.get("metadata", {}).get("image/png", {})
                if size.get("width", 0) > NOTEBOOK_WIDTH_PX:
                    too_wide.append(f"{path.name} cell {number}: {size['width']} px")
    assert not too_wide, too_wide
