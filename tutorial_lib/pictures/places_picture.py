"""Where storages live, as columns of places: this process's memory, shared memory (and the other process that
maps it), a GPU, a file on disk, a file mapped into memory. Each storage is a box in its place, naming the tensors
on it, with its size; arrows are what the code did (``.to()``, ``put()``, ``torch.save``, ``torch.load``).

Places, sizes and which tensors share a storage come from ``facts.places`` (``is_shared()``, the process's
memory map, storage identity, the file's own zip directory), and so does whether an arrow maps a file; the arrows'
words, and whether one writes in place rather than copies, come from the caller."""

from __future__ import annotations

from ..common.checks import describe
from ..facts.memory import format_bytes, format_bytes_short
from ..facts.places import META, OWN, OWN_OR_MAPPED, SHARED, SavedFile, StoragePlace, saved_file, storage_places
from .palette import FAINT, INK, MONO, MUTED, PAPER, SANS, STORAGE, TEXT_PT
from .render_mpl import render, require_axes, with_summary
from .scene import Arrow, Rect, Scene, Style, Text, text_width

NOTE_PT = 7.5
PAD, BOX_PAD, BOX_GAP, HEAD = 8.0, 5.0, 14.0, 30.0
MIN_GAP = 56.0  # between columns: room for an arrow and its words
ON_DISK, ELSEWHERE = "file on disk", "the other process"

STYLES = {
    "column": Style(fill="#f7f7f7", edge=MUTED, width=0.6, zorder=0),
    "column-absent": Style(fill=PAPER, edge=FAINT, width=0.8, dash=(3, 2), zorder=0),
    "header": Style(family=SANS, size=TEXT_PT, weight="bold", color=INK, zorder=5),
    "storage": Style(fill=STORAGE, edge=INK, width=0.8, zorder=2),
    "before": Style(fill=PAPER, edge=FAINT, width=0.8, dash=(3, 2), zorder=2),  # where it was: gone now
    "file": Style(fill=PAPER, edge=INK, width=1.2, zorder=2),
    "process": Style(fill=PAPER, edge=INK, width=0.8, zorder=2),
    "name": Style(family=MONO, size=TEXT_PT, color=INK, zorder=5),
    "name-before": Style(family=MONO, size=TEXT_PT, color=MUTED, zorder=5),
    "note": Style(family=SANS, size=NOTE_PT, color=MUTED, zorder=5),
    "absent": Style(family=SANS, size=NOTE_PT, color=MUTED, zorder=5),
    "move": Style(edge=INK, width=1.0, zorder=3),
    "map": Style(edge=INK, width=1.0, dash=(4, 3), zorder=3),  # a file mapped, not copied: dashed, and said
    "write": Style(edge=INK, width=1.6, dash=(1, 1.5), zorder=3),  # values written into memory already there: dotted
    "move-text": Style(family=MONO, size=NOTE_PT, color=INK, halo=True, zorder=6),
}


#: What each arrow style means, in the legend's words (a legend is drawn once two kinds of arrow are).
ARROW_MEANINGS = {
    "move": "copies or moves the bytes",
    "map": "maps the file's pages, no copy",
    "write": "writes into memory already there (in place)",
}
#: What a move may say it did, as its fourth element, and the arrow style that draws it.
MOVE_KINDS = {"copy": "move", "map": "map", "write": "write"}


def _arrow_kinds(moves, maps: list[bool]) -> list[str]:
    """Each move's arrow style: the kind its fourth element names, else a map where the facts say its target is the
    file's own pages (``maps``), else a copy or move. A kind that the facts contradict (a map that is not one, or a
    copy or write where the file is mapped) is refused: the picture draws what happened, not what was claimed."""
    kinds = []
    for k, (move, mapped) in enumerate(zip(moves, maps)):
        said = move[3] if len(move) > 3 else None
        if said is None:
            kinds.append("map" if mapped else "move")
            continue
        if said not in MOVE_KINDS:
            raise ValueError(f"moves[{k}]'s kind must be one of {', '.join(map(repr, MOVE_KINDS))}, got {said!r}")
        if (said == "map") != mapped:
            facts = "is that file's own pages" if mapped else "is not the pages of a file drawn here"
            raise ValueError(f"moves[{k}] says {said!r}, but {move[1]!r} {facts} (read from /proc/self/maps)")
        kinds.append(MOVE_KINDS[said])
    return kinds


class _Box:
    """One box to draw: its key (what arrows name), column, lines (text, style) and box style."""

    def __init__(self, key: str, column: str, lines: list[tuple[str, str]], style: str):
        self.key, self.column, self.lines, self.style = key, column, lines, style
        self.w = max(text_width(t, MONO if s.startswith("name") else SANS, _size(s)) for t, s in lines) + 2 * BOX_PAD
        self.h = sum(_size(s) * 1.3 for _, s in lines) + 2 * BOX_PAD
        self.x = self.y = 0.0


def _size(style: str) -> float:
    return STYLES[style].size


def _order(column: str) -> tuple[int, str]:
    fixed = {OWN: 0, OWN_OR_MAPPED: 0, SHARED: 1, ELSEWHERE: 2, ON_DISK: 5, META: 7}
    if column in fixed:
        return fixed[column], ""
    return (6 if column.startswith("file ") else 3), column  # devices, then mapped files


def _storage_lines(place: StoragePlace, before: bool) -> list[tuple[str, str]]:
    style = "name-before" if before else "name"
    lines = [(f"{name} (before)" if before else name, style) for name in place.names]
    size = "no memory: shape and dtype only" if place.place == META else f"storage: {format_bytes_short(place.nbytes)}"
    return lines + [(size, "note")]


def places_summary(places, before=(), files=(), moves=(), elsewhere=None, absent=None, kinds=()) -> str:
    """The picture's one line: each place and what it holds, then the arrows, each with what it did in the legend's
    words (``kinds``: each arrow's style, a key of ``ARROW_MEANINGS``)."""
    held: dict[str, list[str]] = {}
    for place in places:
        size = "no memory" if place.place == META else format_bytes(place.nbytes)
        held.setdefault(place.place, []).append(f"{', '.join(place.names)} ({size})")
    for place in before:
        held.setdefault(place.place, []).append(f"{', '.join(place.names)} before ({format_bytes(place.nbytes)})")
    for label, name in (elsewhere or {}).items():
        held.setdefault(ELSEWHERE, []).append(f"{label}, mapping {name}'s storage")
    for file in files:
        held.setdefault(ON_DISK, []).append(
            f"{file.name} ({format_bytes(file.nbytes)}, {len(file.records)} storage record"
            f"{'' if len(file.records) == 1 else 's'})"
        )
    for place, reason in (absent or {}).items():
        held.setdefault(place, []).append(reason)
    parts = [f"{column}: {'; '.join(held[column])}" for column in sorted(held, key=_order)]

    def said(key: str) -> str:
        return f"{key[len('before:') :]} (before)" if key.startswith("before:") else key

    parts += [
        f"{said(move[0])} -> {said(move[1])} by {move[2]}: {ARROW_MEANINGS[kind]}" for move, kind in zip(moves, kinds)
    ]
    return " | ".join(parts)


def places_scene(places, before=(), files=(), moves=(), elsewhere=None, absent=None) -> Scene:
    """The picture of ``draw_places`` as a ``Scene``.

    Ids: ``column:<place>`` and ``header:<place>``; ``box:<key>`` for a storage (key: its first tensor's name), a
    storage before (``before:<name>``), a file (its name) or a process (its label), with texts ``text:<key>:<k>``;
    ``move:<k>`` and ``movetext:<k>`` for the arrows; with two kinds of arrow or more, ``legend:<style>`` (a
    short arrow) and ``legendtext:<style>`` for each kind drawn.
    """
    boxes: list[_Box] = []
    mapped = set()  # boxes of storages that are a file's own pages (torch.load(..., mmap=True))
    for place in places:
        boxes.append(_Box(place.names[0], place.place, _storage_lines(place, False), "storage"))
        if place.mapped_file:
            mapped.add(boxes[-1])
    for place in before:
        boxes.append(_Box(f"before:{place.names[0]}", place.place, _storage_lines(place, True), "before"))
    for label, name in (elsewhere or {}).items():
        boxes.append(_Box(label, ELSEWHERE, [(label, "name"), (f"maps {name}'s storage", "note")], "process"))
    for file in files:
        lines = [(file.name, "name"), (f"file: {format_bytes_short(file.nbytes)}", "note")]
        lines += [(f"record data/{key}: {format_bytes_short(size)}", "note") for key, size in file.records]
        boxes.append(_Box(file.name, ON_DISK, lines, "file"))
    files_by_name = {file.name for file in files}
    columns = sorted({box.column for box in boxes} | set(absent or {}), key=_order)
    keys = {box.key: box for box in boxes}
    for name in {n for place in (*places, *before) for n in place.names[1:]}:
        keys.setdefault(name, next(b for b in boxes if name in [t.split(" (before)")[0] for t, _ in b.lines]))
    for k, (source, target, *_) in enumerate(moves):
        for end in (source, target):
            if end not in keys:
                raise ValueError(f"moves[{k}] names {end!r}, which is none of the boxes here: {sorted(keys)}")
    kinds = _arrow_kinds(moves, [source in files_by_name and keys[target] in mapped for source, target, *_ in moves])
    # a map is dashed and its words say so
    words = [f"{move[2]} (maps, no copy)" if kind == "map" else move[2] for move, kind in zip(moves, kinds)]
    gap = max([MIN_GAP] + [text_width(how, MONO, NOTE_PT) + 16 for how in words])
    items, x, bottom = [], PAD, 0.0
    lefts = {}
    for column in columns:
        inside = [box for box in boxes if box.column == column]
        reason = (absent or {}).get(column)
        width = max([text_width(column, SANS, TEXT_PT, "bold") + 2 * PAD] + [box.w + 2 * PAD for box in inside])
        if reason:
            width = max(width, text_width(reason, SANS, NOTE_PT) + 2 * PAD)
        lefts[column] = (x, width)
        y = PAD + HEAD
        for box in inside:
            box.x, box.y, box.w = x + PAD, y, width - 2 * PAD
            y += box.h + BOX_GAP
        if reason:
            items.append(Text(x + PAD, y, reason, "absent", f"absent:{column}"))
            y += NOTE_PT * 1.3 + BOX_GAP
        bottom = max(bottom, y)
        x += width + gap
    for column in columns:
        left, width = lefts[column]
        style = "column-absent" if column in (absent or {}) and not any(b.column == column for b in boxes) else "column"
        items.append(Rect(left, PAD, width, bottom - PAD, style, f"column:{column}"))
        items.append(Text(left + width / 2, PAD + HEAD / 2, column, "header", f"header:{column}", "middle", "middle"))
    for box in boxes:
        items.append(Rect(box.x, box.y, box.w, box.h, box.style, f"box:{box.key}"))
        line_y = box.y + BOX_PAD
        for k, (text, style) in enumerate(box.lines):
            items.append(Text(box.x + BOX_PAD, line_y, text, style, f"text:{box.key}:{k}"))
            line_y += _size(style) * 1.3
    for k, ((source, target, *_), how, arrow) in enumerate(zip(moves, words, kinds)):
        a, b = keys[source], keys[target]
        top, low = max(a.y, b.y), min(a.y + a.h, b.y + b.h)
        ya, yb = ((top + low) / 2,) * 2 if top < low else (a.y + a.h / 2, b.y + b.h / 2)  # level where they face
        if a.x + a.w <= b.x:  # left to right
            start, end = (a.x + a.w, ya), (b.x, yb)
        elif b.x + b.w <= a.x:
            start, end = (a.x, ya), (b.x + b.w, yb)
        else:  # one column: out of the right side, down (or up) beside the column, back in; the words beside it
            out = max(a.x + a.w, b.x + b.w) + 14
            points = (
                (a.x + a.w, a.y + a.h / 2),
                (out, a.y + a.h / 2),
                (out, b.y + b.h / 2),
                (b.x + b.w, b.y + b.h / 2),
            )
            items.append(Arrow(points, arrow, f"move:{k}"))
            middle = (out + 4, (a.y + a.h / 2 + b.y + b.h / 2) / 2)
            items.append(Text(*middle, how, "move-text", f"movetext:{k}", "start", "middle"))
            continue
        items.append(Arrow((start, end), arrow, f"move:{k}"))
        middle = ((start[0] + end[0]) / 2, (start[1] + end[1]) / 2 - 2)
        items.append(Text(*middle, how, "move-text", f"movetext:{k}", "middle", "bottom"))
    title = places_summary(places, before, files, moves, elsewhere, absent, kinds)
    right = max(
        [x - gap + PAD] + [i.x + text_width(i.text, MONO, NOTE_PT) + PAD for i in items if i.id.startswith("movetext:")]
    )
    drawn = [kind for kind in ARROW_MEANINGS if kind in kinds]
    if len(drawn) > 1:  # what each line style means, in words beside a sample of it
        legend_x, legend_y = PAD, bottom + PAD + NOTE_PT
        for kind in drawn:
            items.append(Arrow(((legend_x, legend_y), (legend_x + 28, legend_y)), kind, f"legend:{kind}"))
            text = ARROW_MEANINGS[kind]
            items.append(Text(legend_x + 34, legend_y, text, "note", f"legendtext:{kind}", "start", "middle"))
            legend_x += 34 + text_width(text, SANS, NOTE_PT) + 18
        right, bottom = max(right, legend_x - 18 + PAD), legend_y + NOTE_PT
    return Scene(right, bottom + PAD, tuple(items), STYLES, title)


def draw_places(tensors, *, before=None, files=None, moves=(), elsewhere=None, absent=None, ax=None):
    """Where each tensor's storage lives, one column per place, and what the code moved where.

    Args:
        tensors: ``{name: tensor}``; tensors on one storage share a box (``tl.storage_places``).
        before: ``tl.storage_places(...)`` taken earlier, drawn dashed as "(before)": where a storage was.
        files: ``{name: path, bytes or io.BytesIO}`` that ``torch.save`` wrote: their size and storage records.
        moves: ``(from, to, how)`` or ``(from, to, how, kind)`` arrows between boxes, named by a tensor's name,
            ``"before:<name>"``, a file's or a process's name; ``how`` is the code that did it, drawn as its
            words and never read. ``kind`` says what the arrow did: ``"copy"`` (a copy or a move: solid),
            ``"write"`` (writes into memory already there, in place, such as ``mul_(2)``: dotted and thicker) or
            ``"map"``. Without it an arrow is a copy or move, unless it runs from a file to a storage that is
            that file's own pages (``torch.load(..., mmap=True)``, read from ``/proc/self/maps``): a map, drawn
            dashed, its words ending in "(maps, no copy)". With two kinds of arrow or more, a legend says what
            each line means; the summary names each arrow's kind in the legend's words.
        elsewhere: ``{label: name}``: another process whose tensor maps ``name``'s storage (it must be in shared
            memory); the label says what that process saw.
        absent: ``{place: reason}``: a place drawn empty with its reason (``{"cuda": "not run here: no GPU"}``).
        ax: a matplotlib Axes to draw into, or None for a new figure sized to fit.

    Returns:
        The matplotlib Figure, with ``fig.summary`` (one line: each place and what it holds, the arrows; a notebook
        shows it as the figure's text),
        ``fig.scene`` and ``fig.places`` (the ``StoragePlace`` facts drawn).

    Raises:
        TypeError, ValueError: as ``tl.storage_places`` and ``tl.saved_file``; a move naming no box, or a
            ``kind`` other than "copy", "write", "map", or "map" where the facts show no mapped file (or not
            "map" where they do); an
        ``elsewhere`` name whose storage is not in shared memory (no other process can map it).
    """
    require_axes(ax)
    places = storage_places(tensors)
    earlier = tuple(before or ())
    if not all(isinstance(place, StoragePlace) for place in earlier):
        raise TypeError(f"before must be what tl.storage_places returned, got {describe(before)}")
    if files is not None and not isinstance(files, dict):
        raise TypeError(f"files must be a dict {{name: path or bytes}}, got {describe(files)}")
    saved = tuple(
        source if isinstance(source, SavedFile) else saved_file(source, name) for name, source in (files or {}).items()
    )
    shared = {name for place in places if place.is_shared for name in place.names}
    for label, name in (elsewhere or {}).items():
        if name not in shared:
            raise ValueError(f"elsewhere[{label!r}] names {name!r}, whose storage is not in shared memory")
    if absent is not None and not all(isinstance(k, str) and isinstance(v, str) for k, v in dict(absent).items()):
        raise TypeError(f"absent must be a dict {{place: reason}} of str, got {absent!r}")
    moves = tuple(tuple(move) for move in moves)
    if not all(len(move) in (3, 4) and all(isinstance(part, str) for part in move) for move in moves):
        raise TypeError(f"moves must be (from, to, how) or (from, to, how, kind) tuples of str, got {moves!r}")
    scene = places_scene(places, earlier, saved, moves, elsewhere, absent)
    fig = with_summary(render(scene, ax=ax), scene.title)
    fig.scene, fig.places = scene, places
    return fig
