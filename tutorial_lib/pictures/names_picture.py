"""Names -> tensor objects -> storages, Python Tutor style: what a line such as ``y = x + y`` or ``y += x`` did to
the names, the objects they hold and the memory those objects read.

``names_picture(snapshots, captions)`` plans the picture as data from ``facts.names.NamesSnapshot`` records (ids,
version counters, data pointers and byte digests torch gave at each moment), numbering each object and storage
once across all panels; ``names_scene`` places it as a ``Scene`` (one band per snapshot, top to bottom), which
``draw_names`` renders with matplotlib.
"""

from __future__ import annotations

from dataclasses import dataclass

from ..common.checks import require_type
from ..common.text import plural
from ..facts.names import NamesSnapshot, StorageRecord, TensorRecord
from . import palette
from .render_mpl import render, require_axes, with_summary
from .scene import Arrow, Rect, Scene, Style, Text


@dataclass(frozen=True)
class PanelObject:
    """A tensor object in one panel: its number across the picture, what torch said of it, and whether it is new
    here (not in the panel before), named here (some name holds it) and its version before (None: new)."""

    number: int
    record: TensorRecord
    new: bool
    named: bool
    version_before: int | None

    def object_id_not_in(self, ids) -> bool:
        """Whether this object's ``id()`` is not among ``ids``."""
        return self.record.object_id not in ids


@dataclass(frozen=True)
class PanelStorage:
    """A storage in one panel: its number, record, whether it is new here, whether its bytes changed since the
    panel before while it stayed at the same address (``written``: a write in place), and whether a named object
    reads it."""

    number: int
    record: StorageRecord
    new: bool
    written: bool
    named: bool


@dataclass(frozen=True)
class NamesPanel:
    """One moment: its caption (the line that just ran), ``(name, object number)`` pairs, objects and storages."""

    caption: str
    names: tuple[tuple[str, int], ...]
    objects: tuple[PanelObject, ...]
    storages: tuple[PanelStorage, ...]
    summary: str

    def object(self, number: int) -> PanelObject:
        """The object numbered ``number`` in this panel."""
        return next(obj for obj in self.objects if obj.number == number)

    def storage_of(self, number: int) -> PanelStorage:
        """The storage object ``number`` reads."""
        key = self.object(number).record.storage.key
        return next(s for s in self.storages if s.record.key == key)


@dataclass(frozen=True)
class NamesPicture:
    """Everything ``draw_names`` shows, as data."""

    panels: tuple[NamesPanel, ...]
    summary: str


def names_picture(snapshots, captions=None) -> NamesPicture:
    """Plan a names -> objects -> storages picture of ``snapshots`` taken one after another.

    Args:
        snapshots: a list of ``NamesSnapshot`` (``tl.names_snapshot(x=x, y=y)``), oldest first.
        captions: one str per snapshot, the line that led to it (e.g. ``"y = x + y"``); default ``"step k"``.

    Returns:
        A ``NamesPicture``: per panel the names, the objects they hold (numbered once across panels by ``id()``,
        which the snapshots keep valid by holding the tensors) and their storages (numbered by data pointer and
        size); an object or storage of the panel before that no name reaches now is kept, marked unnamed.

    Raises:
        TypeError: ``snapshots`` is not a list of NamesSnapshot, or a caption is not a str.
        ValueError: no snapshots, or captions of another length.
    """
    require_type(snapshots, (list, tuple), "snapshots", "a list of NamesSnapshot (tl.names_snapshot(...))")
    if not snapshots:
        raise ValueError("snapshots is empty: give at least one tl.names_snapshot(...)")
    for k, snapshot in enumerate(snapshots):
        require_type(snapshot, NamesSnapshot, f"snapshots[{k}]", "a NamesSnapshot (tl.names_snapshot(...))")
    if captions is None:
        captions = [f"step {k}" for k in range(len(snapshots))]
    require_type(captions, (list, tuple), "captions", "a list of str (one per snapshot)")
    if len(captions) != len(snapshots):
        raise ValueError(f"captions must be one str per snapshot: {len(snapshots)} snapshots, {len(captions)} captions")
    for k, caption in enumerate(captions):
        require_type(caption, str, f"captions[{k}]", "a str")
    object_numbers: dict[int, int] = {}
    storage_numbers: dict[tuple[int, int], int] = {}
    panels, before = [], None
    for snapshot, caption in zip(snapshots, captions):
        named = list(snapshot.objects())
        held = {record.object_id for record in named}
        # An object the panel before named that no name holds now: kept once, drawn as "no name".
        unnamed = [] if before is None else [o.record for o in before.objects if o.named and o.object_id_not_in(held)]
        objects = []
        for record, is_named in [(r, True) for r in named] + [(r, False) for r in unnamed]:
            number = object_numbers.setdefault(record.object_id, len(object_numbers) + 1)
            old = None if before is None else next((o for o in before.objects if o.number == number), None)
            version_before = None if old is None else old.record.version
            objects.append(PanelObject(number, record, old is None and before is not None, is_named, version_before))
        storages, seen = [], set()
        for obj in objects:
            record = obj.record.storage
            if record.key in seen:
                continue
            seen.add(record.key)
            number = storage_numbers.setdefault(record.key, len(storage_numbers) + 1)
            old = None if before is None else next((s for s in before.storages if s.number == number), None)
            versions = [(o.version_before, o.record.version) for o in objects if o.record.storage.key == record.key]
            if old is not None and old.record.digest is not None and record.digest is not None:
                written = old.record.digest != record.digest
            else:
                written = old is not None and any(v0 is not None and v1 > v0 for v0, v1 in versions)
            reached = any(o.named for o in objects if o.record.storage.key == record.key)
            storages.append(PanelStorage(number, record, old is None and before is not None, written, reached))
        pairs = tuple((name, object_numbers[record.object_id]) for name, record in snapshot.names)
        panel = NamesPanel(caption, pairs, tuple(objects), tuple(storages), "")
        panel = NamesPanel(caption, pairs, tuple(objects), tuple(storages), _panel_summary(panel))
        panels.append(panel)
        before = panel
    return NamesPicture(tuple(panels), " | ".join(panel.summary for panel in panels))


def _panel_summary(panel: NamesPanel) -> str:
    """e.g. 'y = x + y: x → object 1 → storage 1; y → object 3 (new) → storage 3 (new); object 2: no name'."""
    parts = []
    for name, number in panel.names:
        obj, storage = panel.object(number), panel.storage_of(number)
        object_text = f"object {number}" + (" (new)" if obj.new else "")
        storage_text = f"storage {storage.number}" + (" (new)" if storage.new else "")
        if storage.written:
            storage_text += " (written in place)"
        parts.append(f"{name} → {object_text} → {storage_text}")
    for obj in panel.objects:
        if not obj.named:
            parts.append(f"object {obj.number}: no name here")
        elif obj.version_before is not None and obj.record.version != obj.version_before:
            parts.append(f"object {obj.number}: version {obj.version_before} → {obj.record.version}")
    return f"{panel.caption}: " + "; ".join(parts)


# Drawing, in points: one band per panel, columns of names, objects and storages.

NAME_X, NAME_W = 8.0, 64.0  # the names column: each name right-aligned in it
OBJECT_X, OBJECT_W = 104.0, 150.0
STORAGE_X, STORAGE_W = 300.0, 150.0
TAG_X = STORAGE_X + STORAGE_W + 8.0  # tags right of a storage box ("written in place")
ROW_H, BOX_H = 48.0, 38.0
CAPTION_H, PANEL_GAP, TOP = 22.0, 14.0, 6.0
WIDTH = TAG_X + 96.0
DASHED = (3.7, 1.6)

STYLES = {
    "caption": Style(family=palette.MONO, size=palette.TITLE_PT, weight="bold", color=palette.INK, zorder=3),
    "name": Style(family=palette.MONO, size=palette.TITLE_PT, color=palette.INK, zorder=3),
    "names-frame": Style(fill=palette.PAPER, edge=palette.MUTED, width=0.8),
    **{f"object{i}": Style(fill=fill, edge=palette.INK, width=1.0) for i, fill in enumerate(palette.TENSOR_TINTS)},
    **{f"object{i}-new": Style(fill=fill, edge=palette.INK, width=2.4) for i, fill in enumerate(palette.TENSOR_TINTS)},
    "unnamed": Style(fill=palette.PAPER, edge=palette.FAINT, width=1.0, dash=DASHED),
    "storage": Style(fill=palette.STORAGE, edge=palette.MUTED, width=1.0),
    "storage-new": Style(fill=palette.STORAGE, edge=palette.INK, width=2.4),
    "storage-written": Style(fill=palette.STORAGE, edge=palette.STALE, width=2.4),
    "box-title": Style(size=palette.TEXT_PT, weight="bold", color=palette.INK, zorder=3),
    "box-text": Style(family=palette.MONO, size=palette.MIN_TEXT_PT + 0.5, color=palette.INK, zorder=3),
    "faded-text": Style(size=palette.TEXT_PT, color=palette.MUTED, zorder=3),
    "tag": Style(size=palette.TEXT_PT, weight="bold", color=palette.INK, zorder=3),
    "written-tag": Style(size=palette.TEXT_PT, weight="bold", color=palette.STALE, zorder=3),
    "pointer": Style(edge=palette.INK, width=1.2, zorder=2),
    "faded-pointer": Style(edge=palette.FAINT, width=1.0, dash=DASHED, zorder=2),
    "column-head": Style(size=palette.MIN_TEXT_PT + 0.5, color=palette.MUTED, zorder=3),
}


def _short(number: int) -> str:
    """The last 4 hex digits of an id or address, e.g. '…7c30': enough to tell two apart by eye."""
    return f"…{number & 0xFFFF:04x}"


def _values_text(record: StorageRecord, itemsize_bytes: int) -> str:
    shown = ", ".join(record.values)
    more = record.nbytes // itemsize_bytes > len(record.values)
    return f"[{shown}{', …' if more else ''}]"


def names_scene(picture: NamesPicture) -> Scene:
    """The drawing of a ``NamesPicture``: per panel (top to bottom) its caption, the names in a frame, an arrow
    from each name to its tensor object, and from each object to its storage.

    Ids: ``<k>/caption``, ``<k>/name:<name>``, ``<k>/pointer:<name>`` (name -> object), ``<k>/object:<n>``,
    ``<k>/objecttext:<n>``, ``<k>/tag:object:<n>`` ("new"), ``<k>/reads:<n>`` (object -> storage),
    ``<k>/storage:<n>``, ``<k>/storagetext:<n>``, ``<k>/tag:storage:<n>`` ("new", "written in place");
    ``k`` is the panel, from 0. An object box says its ``id()`` (last hex digits) and version counter, a storage
    box its size, first values and data pointer: the numbers torch gave.

    Raises:
        TypeError: ``picture`` is not a NamesPicture.
    """
    require_type(picture, NamesPicture, "picture", "a NamesPicture (names_picture(...))")
    items, y = [], TOP
    for k, panel in enumerate(picture.panels):
        items.append(Text(NAME_X, y, panel.caption, "caption", f"{k}/caption"))
        y += CAPTION_H
        heads = [
            (NAME_X + NAME_W, "names", "end"),
            (OBJECT_X, "tensor objects", "start"),
            (STORAGE_X, "storages", "start"),
        ]
        for x, text, anchor in heads:
            items.append(Text(x, y, text, "column-head", f"{k}/head:{text}", anchor))
        y += 12.0
        rows = {}  # object number -> its row
        for name, number in panel.names:
            rows.setdefault(number, len(rows))
        for obj in panel.objects:
            rows.setdefault(obj.number, len(rows))
        storage_rows = {}
        for obj in panel.objects:
            storage_rows.setdefault(obj.record.storage.key, rows[obj.number])
        count = max(rows.values()) + 1
        frame_h = max(len(panel.names), 1) * ROW_H
        items.append(Rect(NAME_X, y, NAME_W, frame_h - (ROW_H - BOX_H), "names-frame", f"{k}/frame"))
        for r, (name, number) in enumerate(panel.names):
            middle = y + r * ROW_H + BOX_H / 2
            items.append(Text(NAME_X + NAME_W - 8, middle, name, "name", f"{k}/name:{name}", "end", "middle"))
            target = y + rows[number] * ROW_H + BOX_H / 2
            points = ((NAME_X + NAME_W - 4, middle), (OBJECT_X - 2, target))
            items.append(Arrow(points, "pointer", f"{k}/pointer:{name}"))
        for obj in panel.objects:
            top = y + rows[obj.number] * ROW_H
            tint = (obj.number - 1) % len(palette.TENSOR_TINTS)
            style = f"object{tint}" + ("-new" if obj.new else "") if obj.named else "unnamed"
            items.append(Rect(OBJECT_X, top, OBJECT_W, BOX_H, style, f"{k}/object:{obj.number}"))
            record = obj.record
            title = f"tensor object {obj.number}"
            detail = f"id {_short(record.object_id)} · version {record.version}"
            if obj.version_before is not None and obj.version_before != record.version:
                detail += f" (was {obj.version_before})"
            text_style = "box-title" if obj.named else "faded-text"
            items.append(Text(OBJECT_X + 6, top + 4, title, text_style, f"{k}/objecttitle:{obj.number}"))
            items.append(Text(OBJECT_X + 6, top + 20, detail, "box-text", f"{k}/objecttext:{obj.number}"))
            if obj.new:
                items.append(
                    Text(OBJECT_X + OBJECT_W - 4, top + 4, "new", "tag", f"{k}/tag:object:{obj.number}", "end")
                )
            elif not obj.named:
                items.append(
                    Text(
                        OBJECT_X + OBJECT_W - 4, top + 4, "no name", "faded-text", f"{k}/tag:object:{obj.number}", "end"
                    )
                )
            target_row = storage_rows[record.storage.key]
            points = ((OBJECT_X + OBJECT_W, top + BOX_H / 2), (STORAGE_X - 2, y + target_row * ROW_H + BOX_H / 2))
            items.append(Arrow(points, "pointer" if obj.named else "faded-pointer", f"{k}/reads:{obj.number}"))
        for storage in panel.storages:
            top = y + storage_rows[storage.record.key] * ROW_H
            style = (
                ("storage-written" if storage.written else "storage-new" if storage.new else "storage")
                if storage.named
                else "unnamed"
            )
            items.append(Rect(STORAGE_X, top, STORAGE_W, BOX_H, style, f"{k}/storage:{storage.number}"))
            record = storage.record
            reader = next(o.record for o in panel.objects if o.record.storage.key == record.key)
            title = f"storage {storage.number} · {plural(record.nbytes, 'byte', fmt=',')}"
            detail = f"{_values_text(record, reader.dtype.itemsize)} at {_short(record.data_ptr)}"
            text_style = "box-title" if storage.named else "faded-text"
            items.append(Text(STORAGE_X + 6, top + 4, title, text_style, f"{k}/storagetitle:{storage.number}"))
            items.append(Text(STORAGE_X + 6, top + 20, detail, "box-text", f"{k}/storagetext:{storage.number}"))
            tag = "written in place" if storage.written else "new" if storage.new else ""
            if tag:
                style = "written-tag" if storage.written else "tag"
                items.append(
                    Text(TAG_X, top + BOX_H / 2, tag, style, f"{k}/tag:storage:{storage.number}", "start", "middle")
                )
        y += count * ROW_H + PANEL_GAP
    return Scene(WIDTH, y, tuple(items), STYLES, picture.summary)


def draw_names(snapshots, captions=None, ax=None):
    """Draw names -> tensor objects -> storages for snapshots taken one after another (Python Tutor style).

    Each panel shows the line that just ran, the names in a frame, an arrow from each name to the tensor object it
    holds (its ``id()``'s last hex digits and its version counter) and from each object to the storage it reads
    (its size, first values and data pointer). Across panels an object or storage keeps its number and colour;
    one that is new is drawn thick and tagged "new"; a storage whose bytes changed at the same address is drawn
    with a vermilion border and tagged "written in place"; an object no name holds any more is dashed, "no name".

    Args:
        snapshots, captions: as ``names_picture``.
        ax: a matplotlib Axes to draw into, or None for a new figure sized to fit.

    Returns:
        The matplotlib Figure, with ``fig.summary`` (one line of text), ``fig.names_picture`` and ``fig.scene``.

    Raises:
        TypeError, ValueError: as ``names_picture`` (``ax`` is checked too).
    """
    require_axes(ax)
    picture = names_picture(snapshots, captions)
    scene = names_scene(picture)
    fig = with_summary(render(scene, ax=ax), picture.summary)
    fig.names_picture, fig.scene = picture, scene
    return fig
