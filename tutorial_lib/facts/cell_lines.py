"""A line of a Jupyter or IPython cell, named and numbered as its reader finds it in the editor.

Python numbers a cell's lines from the code IPython compiled, and IPython strips a cell's leading blank lines
before compiling it (and a cell magic's body's, when the magic runs it as a cell), so the code's line 3 is the
editor's line 5 in a cell that starts with two blank lines. ``cell_place`` and ``shown_lineno`` add back the lines
IPython stripped: they compare the compiled code with what was typed (IPython's input history, or the body that a
cell magic was given). ``%%time`` compiles its body itself under the name ``<timed exec>``; its lines are named
under ``%%time`` while that cell runs.
"""

from __future__ import annotations

import ast
import linecache
import re
import sys

from ..common.checks import require_type

# A cell's code as ipykernel names it (/tmp/ipykernel_<pid>/<hash>.py) or as plain IPython does (<ipython-input-N-…>).
_CELL_FILE = re.compile(r"(?:^|[/\\])ipykernel_\d+[/\\]\d+\.py$|^<ipython-input-(\d+)-\w+>$")
#: The names ``%%time`` compiles its body under (it runs it itself, not as a cell).
_TIMED = ("<timed exec>", "<timed eval>")


def cell_place(filename: str, lineno: int) -> str | None:
    """Line ``lineno`` of the IPython or Jupyter cell whose code ``filename`` is, as a reader finds it:
    ``"line 7 of this cell"`` (the cell running now), ``"line 7 of cell [3]"`` (by its execution count, the number
    its prompt shows) or ``"line 7 of a notebook cell"`` (not found in IPython's history); None for a file.

    The body of a cell magic counts its lines from the line under the magic's (the fixes quote the same numbers):
    ``"line 7 under %%watch_inplace"`` (``… in cell [3]`` for another cell); a line ``%%time`` ran, ``"line 7 under
    %%time"`` while its cell runs (later, ``"… of a notebook cell"``). The leading blank lines IPython stripped
    before compiling are counted back in (see ``shown_lineno``).

    Raises:
        TypeError: ``filename`` is not a str or ``lineno`` not an int.
    """
    require_type(filename, str, "filename", "a str")
    require_type(lineno, int, "lineno", "an int")
    found = _locate(filename)
    if found is None:
        return None
    where, stripped = found
    return f"line {lineno + stripped} {where}"


def shown_lineno(filename: str | None, lineno: int | None) -> int | None:
    """``lineno`` of ``filename`` as its reader counts it: for a cell's code, plus the leading blank lines IPython
    stripped before compiling it (counted from the cell's first line, or from the line under a cell magic's);
    for a file, ``lineno`` itself. None stays None."""
    if filename is None or lineno is None:
        return lineno
    found = _locate(filename)
    return lineno + found[1] if found is not None else lineno


def _locate(filename: str) -> tuple[str, int] | None:
    """(how the cell is named, the blank lines IPython stripped above its code) for a cell's code, None for a
    file."""
    ipython = sys.modules.get("IPython")  # only when IPython runs: never imported here
    shell = ipython.get_ipython() if ipython is not None and hasattr(ipython, "get_ipython") else None
    cells = getattr(getattr(shell, "compile", None), "_filename_map", None)
    number = cells.get(filename) if isinstance(cells, dict) else None
    if filename in _TIMED:
        return _timed(filename, cells, shell)
    if number is None and _CELL_FILE.search(filename) is None:
        return None
    code = _cell_code(filename)
    history = getattr(shell, "history_manager", None)
    parsed, raw = getattr(history, "input_hist_parsed", None), getattr(history, "input_hist_raw", None)
    histories = isinstance(parsed, list) and isinstance(raw, list)
    outer = _outer_cell(cells)
    if outer is not None and outer == filename:  # the cell running now
        if histories and isinstance(number, int) and 0 < number < min(len(parsed), len(raw)):
            if parsed[number].strip() == code:
                return "of this cell", _leading_blank_lines(raw[number])
        return "of this cell", 0
    if outer is not None and code:  # the body of the cell magic that the cell running now runs
        magic = _magic_body(_cell_code(outer))
        stripped = _body_shift(magic[1], code, shell) if magic is not None else None
        if stripped is not None:
            return f"under %%{magic[0]}", stripped
    if code and histories and isinstance(number, int):
        # IPython numbers a cell's code by its execution count; the body of a cell magic that runs it
        # (%%watch_inplace) gets the count after its cell's, which has already moved on
        for prompt in (number, number - 1):
            if not 0 < prompt < min(len(parsed), len(raw)):
                continue
            here = prompt == len(parsed) - 1
            if parsed[prompt].strip() == code:
                return f"of {'this cell' if here else f'cell [{prompt}]'}", _leading_blank_lines(raw[prompt])
            magic = _magic_body(parsed[prompt].strip())
            stripped = _body_shift(magic[1], code, shell) if magic is not None else None
            if stripped is not None:  # a cell magic's body, counted (as Python does) under it
                return f"under %%{magic[0]}" + ("" if here else f" in cell [{prompt}]"), stripped
    return "of a notebook cell", 0


def _timed(filename: str, cells, shell) -> tuple[str, int]:
    """A line ``%%time`` compiled: under ``%%time`` while its cell runs, else in a cell not known by number."""
    outer = _outer_cell(cells)
    magic = _magic_body(_cell_code(outer)) if outer is not None else None
    here = any(f.f_code.co_filename == filename and f.f_code.co_name == "<module>" for f in _frames())
    if magic is not None and magic[0] == "time" and here:
        return "under %%time", _leading_blank_lines(magic[1])  # %%time runs IPython's transforms on its body
    return "of a notebook cell", 0


def _cell_code(filename: str) -> str:
    """The code IPython compiled under ``filename``, stripped; '' if none."""
    entry = linecache.cache.get(filename)
    return "".join(entry[2]).strip() if entry is not None and isinstance(entry[2], list) else ""


def _frames():
    frame = sys._getframe(1)
    while frame is not None:
        yield frame
        frame = frame.f_back


def _outer_cell(cells) -> str | None:
    """The file name of the cell running now: the outermost frame of a cell's code on the stack; None outside."""
    outer = None
    for frame in _frames():
        name = frame.f_code.co_filename
        if frame.f_code.co_name == "<module>" and (name in (cells or {}) or _CELL_FILE.search(name)):
            outer = name
    return outer


def _magic_body(code: str) -> tuple[str, str] | None:
    """(name, body) of ``get_ipython().run_cell_magic('watch_inplace', '', '…body…')``, how IPython runs a cell
    that starts with a cell magic; None for other code."""
    if "run_cell_magic" not in code:
        return None
    try:
        tree = ast.parse(code)
    except SyntaxError:
        return None
    if len(tree.body) != 1 or not isinstance(tree.body[0], ast.Expr):
        return None
    call = tree.body[0].value
    if not (isinstance(call, ast.Call) and isinstance(call.func, ast.Attribute) and call.func.attr == "run_cell_magic"):
        return None
    values = [a.value if isinstance(a, ast.Constant) else None for a in call.args]
    if len(values) != 3 or not all(isinstance(v, str) for v in values):
        return None
    return values[0], values[2]


def _body_shift(body: str, code: str, shell) -> int | None:
    """The lines of a cell magic's ``body`` above where ``code`` (compiled from it) starts; None if ``code`` did not
    come from ``body``."""
    if code and code in body:
        return body[: body.find(code)].count("\n")
    transform = getattr(shell, "transform_cell", None)
    if callable(transform) and transform(body).strip() == code:  # IPython rewrote some of its lines (%magic, !cmd)
        return _leading_blank_lines(body)
    return None


def _leading_blank_lines(text: str) -> int:
    """How many of ``text``'s first lines IPython drops as leading blank lines (``leading_empty_lines``)."""
    count = 0
    for line in text.splitlines():
        if line.strip():
            return count
        count += 1
    return 0
