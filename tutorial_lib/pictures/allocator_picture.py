"""The CUDA caching allocator's own picture: its segments (what it reserved from the driver), the blocks in each
(what it handed out, or keeps free), and in each active block the tensor's bytes and the rounding after them.

Drawn from an allocator snapshot: the dict ``torch.cuda.memory._snapshot()`` returns, or its trimmed form (a
``"segments"`` list whose entries have ``total_size``, ``segment_type`` and ``blocks`` of ``size``,
``requested_size``, ``state``), as ``notebooks/data/h100_allocator_snapshots.json`` stores them. Every width is a
byte count of the snapshot on one byte scale; a segment too short to read is drawn again beside itself, magnified
(its own factor written), and a tail too thin to see gets a magnified inset under its segment. Every factor written is
against that one byte scale and is the ratio drawn.
"""

from __future__ import annotations

from dataclasses import dataclass

from ..common.checks import describe
from ..common.text import plural
from ..facts.memory import MiB, format_bytes, format_bytes_short
from .palette import FAINT, INK, MEMORY_KINDS, MUTED, PAPER
from .scene import Line, Rect, Scene, Style, Text, text_width

LEFT, TOP, RIGHT = 8.0, 8.0, 8.0
BAR_LEFT, BAR_WIDTH = 78.0, 440.0  # a segment's row: its size on the left, its bar, a note on the right
ROW, GAP = 26.0, 8.0
FONT, SMALL = 9.0, 8.0
MAX_SEGMENTS = 40  # more segments than this: the largest ones drawn, the rest counted
MAGNIFY_BELOW = 0.2  # a segment drawn shorter than this share of the full width is also drawn magnified beside it
THIN = 3.0  # a rounding drawn narrower than this (points) is too thin to see: a one-block segment's gets an inset
FACTORS = sorted((m * 10**k for k in range(6) for m in (1, 2, 5)), reverse=True)  # a magnified copy's factors
READABLE = 40.0  # a magnified copy shorter than this (points) is still too small to read its blocks: said so
INSET_WIDTH = BAR_WIDTH * 0.75  # an inset's widest, under the right three quarters of the bars
# the tensors' bytes: the one strong fill of the picture, a dark plum (not blue: the VIEW badge is blue)
TENSOR = "#663366"

STYLES = {
    "segment": Style(fill=PAPER, edge=INK, width=1.2, zorder=1),
    "block-active": Style(fill="#c9d7e8", edge=MUTED, width=0.5, zorder=2),
    "block-free": Style(fill=PAPER, edge=FAINT, width=0.7, dash=(3, 2), zorder=2),
    "tensor": Style(fill=TENSOR, edge="none", zorder=3),
    "rounding": Style(fill=MEMORY_KINDS["allocator's rounding"], edge=MUTED, width=0.5, hatch=True, zorder=3),
    "magnified": Style(fill=PAPER, edge=INK, width=0.8, zorder=1),  # a short segment again, magnified (thinner)
    "inset": Style(fill="none", edge=INK, width=0.8, zorder=4),
    "connector": Style(edge=MUTED, width=0.6, dash=(2, 2), zorder=4),
    "title": Style(size=FONT + 1, weight="bold", zorder=5),
    "label": Style(size=FONT, zorder=5),
    "note": Style(size=SMALL, color="#333333", zorder=5),
    "scale": Style(size=FONT, weight="bold", color=INK, zorder=5),  # the byte scale and a magnification, unmissable
    "legend": Style(size=SMALL, zorder=5),
}


@dataclass(frozen=True)
class Block:
    """One block of a segment: its bytes, the bytes its tensor asked for (active blocks), and whether it is in use."""

    size: int
    requested: int
    active: bool


@dataclass(frozen=True)
class Segment:
    """One segment the allocator reserved (one ``cudaMalloc``): its bytes, its pool and its blocks in order."""

    size: int
    pool: str  # "small" (2 MiB segments, requests up to 1 MiB) or "large"
    blocks: tuple[Block, ...]


def segments_of(snapshot) -> list[Segment]:
    """The segments of an allocator snapshot (``torch.cuda.memory._snapshot()`` or its trimmed form), checked.

    Raises:
        TypeError: ``snapshot`` is not a dict with a ``"segments"`` list (or such a list).
        ValueError: a segment whose blocks do not add up to its size, or a block asking for more than it holds.
    """
    segments = snapshot.get("segments") if isinstance(snapshot, dict) else snapshot
    if not isinstance(segments, (list, tuple)):
        raise TypeError(
            "snapshot must be an allocator snapshot (the dict torch.cuda.memory._snapshot() returns, or one with a "
            f"'segments' list), got {describe(snapshot)}"
        )
    found = []
    for index, segment in enumerate(segments):
        try:
            blocks = tuple(
                Block(
                    int(block["size"]),
                    int(block.get("requested_size", 0)) if block["state"] == "active_allocated" else 0,
                    block["state"] == "active_allocated",
                )
                for block in segment["blocks"]
            )
            size, pool = int(segment["total_size"]), str(segment.get("segment_type", "large"))
        except (KeyError, TypeError) as error:
            raise TypeError(f"snapshot's segment {index} lacks a field of an allocator snapshot: {error}") from None
        if sum(block.size for block in blocks) != size:
            raise ValueError(
                f"snapshot's segment {index}: its blocks add up to {sum(b.size for b in blocks):,} B, not {size:,}"
            )
        for block in blocks:
            if block.requested > block.size:
                raise ValueError(
                    f"snapshot's segment {index}: a block of {block.size:,} B asks for {block.requested:,}"
                )
        found.append(Segment(size, pool, blocks))
    return found


def snapshot_summary(segments: list[Segment], source: str) -> str:
    """One line: the segments (reserved), the active blocks (allocated), the tensors' bytes and the rounding."""
    reserved = sum(s.size for s in segments)
    active = [b for s in segments for b in s.blocks if b.active]
    allocated = sum(b.size for b in active)
    requested = sum(b.requested for b in active)
    pools = {pool: [s for s in segments if s.pool == pool] for pool in ("small", "large")}
    parts = ", ".join(plural(len(found), f"{pool} segment") for pool, found in pools.items() if found)
    zero = sum(1 for b in active if not b.size)
    empty = f" ({zero} of 0 B, not drawn)" if zero else ""
    if not segments:
        return f"{source}: no segments; the allocator has reserved nothing"
    return (
        f"{source}: {parts}, reserved {format_bytes(reserved)}; {plural(len(active), 'active block')}{empty}, "
        f"allocated {format_bytes(allocated)}: the tensors asked for {format_bytes(requested)}, the rounding adds "
        f"{format_bytes(allocated - requested)}; free blocks kept in the segments {format_bytes(reserved - allocated)}"
    )


def _note(segment: Segment) -> str:
    """The segment's blocks counted as drawn: a 0 B block (no width to draw) is counted apart, "not drawn"."""
    drawn = [b for b in segment.blocks if b.size]
    active = [b for b in drawn if b.active]
    free = len(drawn) - len(active)
    if len(drawn) == 1 and active:
        rounding = active[0].size - active[0].requested
        text = f"1 block; rounding {rounding:,} B"
    else:
        text = plural(len(active), "active block")
        if free:
            text += f", {free} free ({format_bytes_short(sum(b.size for b in drawn if not b.active))})"
    empty = len(segment.blocks) - len(drawn)
    if empty:
        text += f"; {plural(empty, 'block')} of 0 B, not drawn"
    return text


def allocator_scene(snapshot, *, source: str) -> Scene:
    """The allocator's segments, blocks and tensors as a ``Scene`` (see ``draw_allocator_snapshot``)."""
    segments = segments_of(snapshot)
    if not isinstance(source, str) or not source.strip():
        raise TypeError(f"source must say where the snapshot comes from (a non-empty str), got {describe(source)}")
    items: list = [Text(LEFT, TOP + FONT, source, "title", id="alloc-source")]
    y = TOP + FONT + 14
    if not segments:  # nothing to draw to scale: said in words, no scale, no legend
        text = "no segments: the allocator has reserved nothing"
        items.append(Text(LEFT, y + 6, text, "scale", id="alloc-empty"))
        width = max(BAR_LEFT + BAR_WIDTH, _right(items[-1])) + RIGHT
        return Scene(width, y + 18, tuple(items), STYLES, snapshot_summary(segments, source))
    # the legend: what each fill means, in words beside its swatch
    x = LEFT
    for style, name in (
        ("segment", "segment (reserved)"),
        ("block-active", "block in use (allocated)"),
        ("tensor", "tensor's bytes"),
        ("rounding", "rounding (block beyond the tensor)"),
        ("block-free", "free block (cached)"),
    ):
        items.append(Rect(x, y, 12, 10, style, id=f"alloc-legend-swatch-{style}"))
        items.append(Text(x + 16, y + 5, name, "legend", id=f"alloc-legend-{style}", baseline="middle"))
        x += 16 + text_width(name, "sans", SMALL) + 14
    y += 20
    kept = set(sorted(range(len(segments)), key=lambda n: -segments[n].size)[:MAX_SEGMENTS])
    shown = [(n, s) for n, s in enumerate(segments) if n in kept]
    # one byte scale for every segment, so a 2 MiB segment is drawn a sixteenth as long as a 32 MiB one
    widest = max(s.size for _, s in shown)
    scale = BAR_WIDTH / widest if widest else 0.0
    said = f"one byte scale: full width = {format_bytes_short(widest)}" if widest else "every segment is 0 B long"
    items.append(Text(LEFT, y + 6, said, "scale", id="alloc-scale"))
    y += 18
    magnify = _magnification(dict(shown), scale)
    for pool in ("small", "large"):
        in_pool = [(n, s) for n, s in shown if s.pool == pool]
        if not in_pool:
            continue
        heading = (
            "small pool: 2 MiB segments, for requests of at most 1 MiB"
            if pool == "small"
            else "large pool: one segment per cudaMalloc, its size rounded up to 2 MiB"
        )
        items.append(Text(LEFT, y + 8, heading, "label", id=f"alloc-{pool}-heading", baseline="middle"))
        y += 18
        for number, segment in in_pool:
            prefix = f"alloc-seg{number}"
            width = segment.size * scale
            items.append(
                Text(
                    BAR_LEFT - 6,
                    y + ROW / 2,
                    format_bytes_short(segment.size),
                    "label",
                    id=f"{prefix}-size",
                    anchor="end",
                    baseline="middle",
                )
            )
            items.append(Rect(BAR_LEFT, y, width, ROW, "segment", id=prefix))
            thin_tail = _blocks(items, prefix, segment, BAR_LEFT, y, scale)
            end = BAR_LEFT + width
            if magnify and number in magnify[0]:
                # too short to read its blocks: beside it, the same segment magnified, its own factor written
                factors, zoom_left = magnify
                factor = factors[number]
                label = f"magnified ×{factor:,}"
                middle = y + ROW / 2
                items.append(Text(end + 6, middle, label, "scale", id=f"{prefix}-magnified-label", baseline="middle"))
                magnified = f"{prefix}-magnified"
                items.append(Rect(zoom_left, y, width * factor, ROW, "magnified", id=magnified))
                # a rounding the copy shows needs no inset; one still too thin gets it under the true-size bar,
                # so that its factor, like every other in the picture, is against the one byte scale
                thin_tail = thin_tail if _blocks(items, magnified, segment, zoom_left, y, scale * factor) else None
                end = zoom_left + width * factor
            note = _note(segment)
            if magnify and number in magnify[0] and width * magnify[0][number] < READABLE:
                note = f"still too small to read; {note}"  # even the largest factor leaves it short: said so
            items.append(Text(end + 6, y + ROW / 2, note, "note", id=f"{prefix}-note", baseline="middle"))
            y += ROW + GAP
            if thin_tail is not None:
                y = _inset(items, prefix, thin_tail, y)
    left_out = len(segments) - len(shown)
    if left_out:
        items.append(
            Text(
                LEFT,
                y + 6,
                f"and {plural(left_out, 'smaller segment')} not drawn",
                "note",
                id="alloc-left-out",
                baseline="middle",
            )
        )
        y += 16
    notes = [item for item in items if isinstance(item, Text) and item.style in ("note", "scale")]
    right = max([BAR_LEFT + BAR_WIDTH, x] + [_right(item) for item in notes])
    width = right + RIGHT
    return Scene(width, y + 4, tuple(items), STYLES, snapshot_summary(segments, source))


def _magnification(segments: dict[int, Segment], scale: float) -> tuple[dict[int, int], float] | None:
    """For segments drawn shorter than ``MAGNIFY_BELOW`` of the full width: each one's own factor (1, 2 or 5 times
    a power of ten, the largest its copy fits at), by its number in ``segments``, and where the magnified copies
    start (one column for all); None when every segment is long enough to read. A 2 MiB segment beside a 100 MiB
    one is magnified more than the 100 MiB one, so that each copy is long enough to read."""
    right = BAR_LEFT + BAR_WIDTH
    short = {n: s.size * scale for n, s in segments.items() if 0 < s.size * scale < MAGNIFY_BELOW * BAR_WIDTH}

    def label_room(factor: int) -> float:  # room for its label, and at least for "magnified ×1000"
        return max(text_width(t, "sans", FONT, "bold") for t in ("magnified ×1000", f"magnified ×{factor:,}"))

    def fits(width: float, zoom_left: float | None):
        """The largest factor whose copy fits right of ``zoom_left`` (its own column when None) and whose label
        fits before it, with the column it needs; None when no factor above 1 does."""
        for factor in FACTORS:
            own_left = BAR_LEFT + width + 6 + label_room(factor) + 8
            left = own_left if zoom_left is None else zoom_left
            if own_left <= left and factor * width <= right - left:
                return (factor, left) if factor > 1 else None
        return None

    alone = {n: found for n, width in short.items() if (found := fits(width, None)) is not None}
    if not alone:
        return None
    zoom_left = max(left for _, left in alone.values())  # one column, right of the widest need
    factors = {n: found[0] for n in alone if (found := fits(short[n], zoom_left)) is not None}
    return (factors, zoom_left) if factors else None


def _blocks(items: list, prefix: str, segment: Segment, left: float, y: float, scale: float):
    """A segment's blocks drawn into its bar from ``left`` at ``scale`` points a byte; the thin tail of a one-block
    segment (its block, index and place) when its rounding is too thin to see, else None."""
    x, thin_tail = left, None
    for k, block in enumerate(segment.blocks):
        block_width = block.size * scale
        ident = f"{prefix}-block{k}"
        if not block.size:  # no width to draw: the row's note counts it apart
            continue
        if not block.active:
            items.append(Rect(x, y + 4, block_width, ROW - 8, "block-free", id=ident))
        else:
            items.append(Rect(x, y + 4, block_width, ROW - 8, "block-active", id=ident))
            tensor_width = block.requested * scale
            items.append(Rect(x, y + 8, tensor_width, ROW - 16, "tensor", id=f"{ident}-tensor"))
            rounding = block.size - block.requested
            if rounding:
                items.append(
                    Rect(x + tensor_width, y + 8, rounding * scale, ROW - 16, "rounding", id=f"{ident}-rounding")
                )
                if rounding * scale < THIN and len(segment.blocks) == 1:
                    thin_tail = (k, block, x, scale)
        x += block_width
    return thin_tail


def _right(item: Text) -> float:
    style = STYLES[item.style]
    width = text_width(item.text, "sans", style.size, style.weight)
    return item.x + (width if item.anchor == "start" else width / 2 if item.anchor == "middle" else 0)


def _window(block: Block, scale: float):
    """The end of ``block`` an inset shows, and the whole factor it is magnified by there against ``scale``: its
    last 2 MiB (or 4 times its rounding), else, where that would not magnify or would leave the rounding too thin to
    see, its last power-of-two bytes holding 4 times the rounding; None when no window does both."""
    rounding = block.size - block.requested
    for window in (max(2 * MiB, 4 * rounding), 1 << (4 * rounding - 1).bit_length()):
        window = min(block.size, window)
        factor = int(INSET_WIDTH / (window * scale) * (1 + 1e-9))  # whole, so that the drawn ratio is the one said
        if factor > 1 and rounding * scale * factor >= THIN:
            return window, factor
    return None


def _inset(items: list, prefix: str, tail, y: float) -> float:
    """The end of a block whose rounding is too thin to see, magnified under it, with connector lines from the bar
    it is in (drawn at ``tail``'s scale, the picture's byte scale): its factor is against that bar. Nothing is drawn
    when no window of the block magnifies it enough to show its rounding."""
    k, block, block_x, drawn_scale = tail
    rounding = block.size - block.requested
    found = _window(block, drawn_scale)
    if found is None:
        return y
    window, factor = found
    window_x = block_x + (block.size - window) * drawn_scale  # where the window starts in the segment's bar
    end_x = block_x + block.size * drawn_scale
    zoom = drawn_scale * factor  # points a byte in the inset
    inset_left, inset_width = BAR_LEFT + BAR_WIDTH - INSET_WIDTH, window * zoom
    top = y + 14
    ident = f"{prefix}-block{k}-inset"
    items.append(Line(((window_x, y - GAP), (inset_left, top)), "connector", id=f"{ident}-connector-left"))
    items.append(Line(((end_x, y - GAP), (inset_left + inset_width, top)), "connector", id=f"{ident}-connector-right"))
    tensor_width = (window - rounding) * zoom
    # the block's band behind its end, as in the bar above (the tensor on pale blue there, not on white here)
    items.append(Rect(inset_left, top, inset_width, ROW - 8, "block-active", id=f"{ident}-block"))
    items.append(Rect(inset_left, top + 4, tensor_width, ROW - 16, "tensor", id=f"{ident}-tensor"))
    items.append(
        Rect(inset_left + tensor_width, top + 4, rounding * zoom, ROW - 16, "rounding", id=f"{ident}-rounding")
    )
    items.append(Rect(inset_left, top, inset_width, ROW - 8, "inset", id=ident))
    # named left of the inset, below the connectors (they end at its top corners): no line strikes the label
    label_x, middle = inset_left - 6, top + (ROW - 8) / 2
    label = f"the block's last {format_bytes_short(window)},"
    items.append(Text(label_x, middle - 5, label, "note", id=f"{ident}-label", anchor="end", baseline="middle"))
    zoom_text = f"magnified ×{factor:,}"
    items.append(Text(label_x, middle + 5, zoom_text, "note", id=f"{ident}-zoom", anchor="end", baseline="middle"))
    for x, text, part, anchor in (
        (inset_left + tensor_width / 2, f"tensor ends: {block.requested:,} B", "tensor", "middle"),
        (inset_left + inset_width, f"rounding {rounding:,} B", "rounding", "end"),
    ):
        items.append(
            Text(x, top + ROW - 8 + 10, text, "note", id=f"{ident}-{part}-label", anchor=anchor, baseline="middle")
        )
    return top + ROW - 8 + 20


def draw_allocator_snapshot(snapshot, *, source: str, ax=None):
    """The CUDA caching allocator's segments, their blocks and the tensors in them, from an allocator snapshot.

    Each segment (one ``cudaMalloc``, what ``memory_reserved()`` counts) is a framed bar; its blocks sit in it in
    order: an active block (what ``memory_allocated()`` counts) holds its tensor's requested bytes, solid, and the
    rounding after them, hatched; a free block (kept for the next tensor) is dashed. Every segment is on one byte
    scale (said above them), so a 2 MiB small-pool segment is a sixteenth as long as a 32 MiB one; a segment
    shorter than a fifth of the widest is drawn again beside itself, magnified by its own factor, written there
    (the largest 1, 2 or 5 times a power of ten its copy fits at; a copy still too short to read says so). A 0 B
    block has no width: it is not drawn, and the row's note counts it apart. A
    rounding too thin to see in a one-block segment (in its magnified copy too, if it has one) gets an inset under
    its true-size bar: the block's last 2 MiB, or fewer bytes where 2 MiB would not magnify enough to show the
    rounding, magnified by the whole factor written beside it (against the byte scale, as drawn). A snapshot with
    no segments says so in words.

    Args:
        snapshot: ``torch.cuda.memory._snapshot()`` (take it on your GPU), or a dict with a ``"segments"`` list in
            its form, as ``notebooks/data/h100_allocator_snapshots.json`` stores them.
        source: where the snapshot comes from (the device), shown as the title.
        ax: a matplotlib Axes to draw on; a new figure when None.

    Returns:
        The matplotlib Figure; ``fig.summary`` holds the one-line text summary (a notebook shows it as the figure's
        text), ``fig.scene`` the ``Scene``.

    Raises:
        TypeError: ``snapshot`` is not a snapshot, ``source`` not a non-empty str, ``ax`` not a matplotlib Axes.
        ValueError: a segment whose blocks do not add up to its size.
    """
    from .render_mpl import render, require_axes, with_summary

    require_axes(ax, "ax")
    scene = allocator_scene(snapshot, source=source)
    fig = with_summary(render(scene, ax=ax), scene.title)
    fig.scene = scene
    return fig
