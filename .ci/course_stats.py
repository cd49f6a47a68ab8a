"""`make course-stats`: how long each notebook takes a learner, measured from the committed notebooks.

The pace of a normal learner (issue 19's formula): visible prose words / 150 per minute, + 0.5 min per code cell,
+ 0.04 min per output line, + 1 min per figure, widget or HTML display, + 6 min per exercise, + 1 min per quick
prediction. Visible prose is the markdown outside collapsed solutions (a cell with ``<details>``), without fenced
code or HTML tags. The setup cell is not counted. An exercise is a ``tl.check(`` cell that is not a prediction; a
prediction is a cell tagged ``predict``. Its feedback box is an HTML display and counts as one, like any other.

The budget of the core path (notebooks/*.ipynb): each chapter at most 2,500 words and 45 minutes, at least one
check (exercise or prediction) per 600 words, sentences of at most 20 words on average, and the whole core path at
most 6 hours. Deep dives (notebooks/deep_dives/) have no budget; their times are printed for reading lists.
tests/test_course_budget.py holds the core path to the budget; INSTRUCTORS.md and the README quote the table.

Usage: python .ci/course_stats.py   (prints the tables; exits 1 when the core path is over its budget)
"""

from __future__ import annotations

import re
import sys
from dataclasses import dataclass
from pathlib import Path

import nbformat
from notebook_paths import core_notebooks, deep_dives

MAX_WORDS = 2500
MAX_MINUTES = 45
MAX_WORDS_PER_CHECK = 600
MAX_WORDS_PER_SENTENCE = 20
MAX_CORE_MINUTES = 360

WORD = re.compile(r"[A-Za-z0-9_`'.\-]+")
FENCED_CODE = re.compile(r"```.*?```", re.DOTALL)
HTML_TAG = re.compile(r"<[^>]+>")
DISPLAY_MIMES = ("image/png", "image/svg+xml", "application/vnd.jupyter.widget-view+json", "text/html")


@dataclass(frozen=True)
class NotebookStats:
    name: str
    words: int
    sentences: int
    code_cells: int
    output_lines: int
    displays: int
    exercises: int
    predictions: int

    @property
    def checks(self) -> int:
        return self.exercises + self.predictions

    @property
    def minutes(self) -> float:
        return (
            self.words / 150
            + 0.5 * self.code_cells
            + 0.04 * self.output_lines
            + self.displays
            + 6 * self.exercises
            + self.predictions
        )

    @property
    def words_per_check(self) -> float:
        return self.words / self.checks if self.checks else float("inf")

    @property
    def words_per_sentence(self) -> float:
        return self.words / self.sentences if self.sentences else 0.0


def visible_prose(markdown: str) -> str:
    """The text a learner reads in a markdown cell: no fenced code, no HTML tags."""
    return HTML_TAG.sub(" ", FENCED_CODE.sub(" ", markdown))


def count_words(text: str) -> int:
    return len(WORD.findall(text))


def count_sentences(text: str) -> int:
    """Sentences, counting each heading, list item and table row as one when it has no full stop of its own."""
    count = 0
    for line_group in re.split(r"\n\s*(?=[#*\-|]|\d+\.\s)", text):
        if not WORD.search(line_group):
            continue
        # A sentence ends at . ! or ? followed by a space or the end (not inside 2.13 or x.t()).
        count += max(1, len(re.findall(r"[.!?](?=\s|$)", line_group.strip())))
    return count


def output_counts(cell) -> tuple[int, int]:
    """(output lines, displays) of one code cell's stored outputs."""
    lines = displays = 0
    for output in cell.get("outputs", []):
        data = output.get("data", {})
        if output.get("output_type") == "stream":
            lines += output.get("text", "").count("\n")
        elif any(mime in data for mime in DISPLAY_MIMES):
            displays += 1
        elif "text/plain" in data:
            lines += data["text/plain"].count("\n") + 1
    return lines, displays


def notebook_stats(path: Path) -> NotebookStats:
    notebook = nbformat.read(path, as_version=4)
    words = sentences = code_cells = output_lines = displays = exercises = predictions = 0
    for cell in notebook.cells:
        tags = cell.metadata.get("tags", [])
        if cell.cell_type == "markdown":
            if "<details>" not in cell.source:
                prose = visible_prose(cell.source)
                words += count_words(prose)
                sentences += count_sentences(prose)
            continue
        if cell.cell_type != "code" or "setup" in tags:
            continue
        code_cells += 1
        is_prediction = "predict" in tags
        predictions += is_prediction
        exercises += "tl.check(" in cell.source and not is_prediction
        lines, shown = output_counts(cell)
        output_lines += lines
        displays += shown
    return NotebookStats(path.name, words, sentences, code_cells, output_lines, displays, exercises, predictions)


def over_budget(stats: NotebookStats) -> list[str]:
    """Why a core chapter is over its budget (empty when it is within it)."""
    problems = []
    if stats.words > MAX_WORDS:
        problems.append(f"{stats.words} words > {MAX_WORDS}")
    if stats.minutes > MAX_MINUTES:
        problems.append(f"{stats.minutes:.0f} min > {MAX_MINUTES}")
    if stats.words_per_check > MAX_WORDS_PER_CHECK:
        problems.append(f"{stats.checks} checks for {stats.words} words (one per {MAX_WORDS_PER_CHECK} at least)")
    if stats.words_per_sentence > MAX_WORDS_PER_SENTENCE:
        problems.append(f"{stats.words_per_sentence:.1f} words per sentence > {MAX_WORDS_PER_SENTENCE}")
    return problems


def table(rows: list[NotebookStats]) -> list[str]:
    header = (
        f"{'notebook':62} {'words':>6} {'w/sent':>6} {'cells':>5} {'outl':>5} {'disp':>4} {'ex':>3} "
        f"{'pred':>4} {'w/check':>7} {'min':>5}"
    )
    lines = [header, "-" * len(header)]
    for row in rows:
        per_check = f"{row.words_per_check:.0f}" if row.checks else "-"
        lines.append(
            f"{row.name[:62]:62} {row.words:6} {row.words_per_sentence:6.1f} {row.code_cells:5} "
            f"{row.output_lines:5} {row.displays:4} {row.exercises:3} {row.predictions:4} {per_check:>7} "
            f"{row.minutes:5.0f}"
        )
    return lines


def main() -> int:
    core = [notebook_stats(path) for path in core_notebooks()]
    deep = [notebook_stats(path) for path in deep_dives()]
    print("Core path (notebooks/): budget 2,500 words, 45 min, one check per 600 words, 20 words a sentence")
    print("\n".join(table(core)))
    core_minutes = sum(row.minutes for row in core)
    problems = [f"{row.name}: {problem}" for row in core for problem in over_budget(row)]
    if core_minutes > MAX_CORE_MINUTES:
        problems.append(f"core path: {core_minutes:.0f} min > {MAX_CORE_MINUTES}")
    print(
        f"core path: {len(core)} chapters, {sum(row.words for row in core):,} words, {core_minutes:.0f} min "
        f"({core_minutes / 60:.1f} h), {sum(row.checks for row in core)} checks"
    )
    if deep:
        print()
        print("Deep dives (notebooks/deep_dives/): no budget; read after the core path")
        print("\n".join(table(deep)))
        deep_minutes = sum(row.minutes for row in deep)
        print(
            f"deep dives: {len(deep)} notebooks, {sum(row.words for row in deep):,} words, {deep_minutes:.0f} min "
            f"({deep_minutes / 60:.1f} h)"
        )
    for problem in problems:
        print("over budget:", problem)
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
