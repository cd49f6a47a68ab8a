"""The memory timeline draws what the model layer measured, nothing else (the op table: test_tables.py).

Tests read the scene: each column's bands, measured in points against the byte axis's own ticks, are the bytes
the report says were held; phases, op names, start, end and the peak are where the picture says they are.
"""

import matplotlib

matplotlib.use("Agg")

import re  # noqa: E402

import matplotlib.pyplot as plt  # noqa: E402
import pytest  # noqa: E402
import torch  # noqa: E402
from hypothesis import HealthCheck, given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402
from torch import nn  # noqa: E402

import tutorial_lib as tl  # noqa: E402
from tutorial_lib.facts.memory import KINDS, Allocation, MemoryReport  # noqa: E402
from tutorial_lib.pictures import timeline as timeline_module  # noqa: E402
from tutorial_lib.pictures.scene import Polygon, Rect, Text, text_width  # noqa: E402
from tutorial_lib.pictures.timeline import (  # noqa: E402
    MAX_BANDS,
    draw_memory_timeline,
    memory_scene,
    memory_svg,
    memory_timeline_summary,
)


def measured_pair():
    x = torch.randn(256, 256)
    with tl.measure_memory() as out_of_place:
        kept = (x * 2).relu().sum()
    with tl.measure_memory() as in_place:
        kept_too = x.mul(2).relu_().sum()  # a name of its own: binding kept again would free the first sum here
    del kept, kept_too
    return out_of_place, in_place


def points_per_byte(scene, run=0):
    """The byte axis's scale, read from two of its tick labels (``'2 MiB'``) and their heights."""
    units = {"B": 1, "KiB": 2**10, "MiB": 2**20}
    ticks = []
    for item in scene.items:
        if isinstance(item, Text) and item.id.startswith(f"run{run}-tick-label-"):
            value, unit = item.text.split()
            ticks.append((float(value) * units[unit], item.y))
    (low, low_y), (high, high_y) = ticks[0], ticks[-1]
    return (low_y - high_y) / (high - low), low_y + low * (low_y - high_y) / (high - low)  # scale, y of 0 bytes


def column_heights(scene, run, column):
    """Bytes the bands stack above and below zero in one op column (``column='end'`` for the end)."""
    ident = f"run{run}-end" if column == "end" else f"run{run}-op-{column}"
    box = scene.ids()[ident]
    x = box.x + box.w / 2
    scale, _ = points_per_byte(scene, run)
    above = below = 0.0
    for item in scene.items:
        if not (isinstance(item, Polygon) and item.id.startswith(f"run{run}-")):
            continue
        edges = [
            p[1]
            for p, q in zip(item.points, item.points[1:] + item.points[:1])
            if p[1] == q[1] and min(p[0], q[0]) < x < max(p[0], q[0])
        ]
        if len(edges) == 2:
            height = (max(edges) - min(edges)) / scale
            if "-before-" in item.id:
                below += height
            else:
                above += height
    return above, below


def column_top(scene, run, column):
    """The bytes at the top of the bands stacked in one op column, read on the byte axis (which may not start at
    0: the picture breaks it when what was held before dwarfs the block)."""
    ident = f"run{run}-end" if column == "end" else f"run{run}-op-{column}"
    box = scene.ids()[ident]
    x = box.x + box.w / 2
    scale, zero_y = points_per_byte(scene, run)
    tops = [
        min(p[1], q[1])
        for item in scene.items
        if isinstance(item, Polygon) and item.id.startswith(f"run{run}-band-")
        for p, q in zip(item.points, item.points[1:] + item.points[:1])
        if p[1] == q[1] and min(p[0], q[0]) < x < max(p[0], q[0])
    ]
    return (zero_y - min(tops)) / scale if tops else 0.0  # nothing drawn: the axis starts at 0 bytes then


STEPS = {
    "relu": lambda x: x.relu(),
    "double": lambda x: x * 2,
    "sum": lambda x: x.sum().expand(x.shape).clone(),
    "mask": lambda x: x[x > 0],
    "cat": lambda x: torch.cat([x, x])[: x.numel()],
    "add_": lambda x: x.add_(1),
}


@settings(max_examples=15, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.integers(10, 5000), st.lists(st.sampled_from(sorted(STEPS)), min_size=1, max_size=6))
def test_each_column_stacks_the_bytes_the_report_says_were_held(size, steps):
    x = torch.randn(size)
    with tl.measure_memory() as mem:
        for step in steps:
            x = STEPS[step](x)  # rebinding: the old x is freed, from before the block on the first step
    scene = memory_scene(mem, compact=False)
    for column, (_, held) in enumerate(mem.timeline):
        above, below = column_heights(scene, 0, column)
        # on what the block found held: the bands of what was held when the op returned; hatched on top: what it
        # held only while it ran; nothing below zero (what the block freed of the memory before it is no longer
        # in the bottom band)
        assert below == 0
        # (read on the axis's tick labels, which carry 6 significant digits: the tolerance grows with the bytes)
        tolerance = size * 0.01 + 2 + mem.held_before * 1e-5
        assert column_top(scene, 0, column) == pytest.approx(mem.held_before + mem.most_held[column], abs=tolerance)
    assert column_top(scene, 0, "end") == pytest.approx(mem.held_before + mem.allocated, abs=tolerance)
    assert scene.title == memory_timeline_summary([mem], ["block"]) == memory_timeline_summary(mem)
    with pytest.raises(TypeError, match=r"reports\[1\] must be a MemoryReport"):
        memory_timeline_summary([mem, "mem"], ["a", "b"])
    with pytest.raises(ValueError, match="one label per report"):
        memory_timeline_summary([mem], ["a", "b"])


def test_a_band_ends_at_the_op_that_frees_it():
    t = torch.randn(1000)
    with tl.measure_memory() as mem:
        total = (t * 2).sum()  # the product is freed as sum returns: its band covers mul and sum, not the end
    scene = memory_scene(mem, labels=["(t * 2).sum()"], compact=False)
    ids = scene.ids()
    product = next(
        i
        for i, item in ids.items()
        if isinstance(item, Polygon)
        and "-band-" in i
        and item.style != "band-held before the block"
        and max(p[1] for p in item.points) - min(p[1] for p in item.points) > 5
    )
    right = max(p[0] for p in ids[product].points)
    sum_column = ids["run0-op-1"]
    assert right == pytest.approx(sum_column.x + sum_column.w)
    assert right < ids["run0-end"].x
    assert column_top(scene, 0, "end") == pytest.approx(mem.held_before + 4, abs=1)
    del total


def test_before_and_end_are_labelled_and_no_op_name_is_rotated():
    out_of_place, _ = measured_pair()
    scene = memory_scene(out_of_place, compact=False)
    texts = dict(scene.texts())
    assert texts["run0-start-label"] == "before" and texts["run0-end-label"] == "end"
    start, end, frame = (scene.ids()[f"run0-{name}"] for name in ("start", "end", "frame"))
    assert start.x + start.w < frame.x and frame.x + frame.w < end.x  # start and end stand apart from the ops
    assert not [item for item in scene.items if isinstance(item, Text) and item.rotation]
    assert not [ident for ident in texts if ident.startswith("run0-op-name-") or ident == "run0-op-note"]


def test_many_ops_get_a_few_horizontal_op_numbers_and_a_hover_column_each():
    x = torch.randn(100)
    with tl.measure_memory() as mem:
        for _ in range(60):
            x = x + 1
    scene = memory_scene(mem, compact=False)
    texts = dict(scene.texts())
    numbers = [texts[i] for i in texts if re.fullmatch(r"run0-op-number-\d+", i)]
    assert 2 <= len(numbers) <= 8 and numbers[-1] == "60"
    assert all(re.fullmatch(r"(op )?\d+", n) for n in numbers)
    frame = scene.ids()["run0-frame"]
    for ident in texts:
        if ident.startswith("run0-op-number-"):
            item = scene.ids()[ident]
            assert item.y >= frame.y + frame.h and item.rotation == 0  # under the frame, horizontal
    assert len([i for i in scene.ids() if re.fullmatch(r"run0-op-\d+", i)]) == 60  # a hover column per op
    assert not [
        i for i in dict(memory_scene(mem, show_ops=False, compact=False).texts()) if i.startswith("run0-op-number-")
    ]


def test_the_peak_label_stays_inside_the_frame():
    for work in (lambda x: x.relu(), lambda x: (x * 2).sum(), lambda x: [x + i for i in range(30)]):
        x = torch.randn(1000)
        with tl.measure_memory() as mem:
            kept = work(x)
        scene = memory_scene(mem, compact=False)
        label, frame = scene.ids()["run0-peak-label"], scene.ids()["run0-frame"]
        width = text_width(label.text, "sans", scene.styles["peak-label"].size, "bold")
        left = label.x if label.anchor == "start" else label.x - width
        assert frame.x <= left and left + width <= frame.x + frame.w
        assert label.y - scene.styles["peak-label"].size >= frame.y  # under the frame's top edge
        at = mem.timeline[mem.most_held.index(mem.peak)][0].removeprefix("aten::")
        assert label.text == f"peak +{tl.pictures.timeline.short_bytes(mem.peak)} at {at}"  # above what was held
        del kept


def train_step(model, optimizer, inputs):
    optimizer.zero_grad(set_to_none=False)
    with torch.profiler.record_function("forward"):
        loss = model(inputs).sum()
    loss.backward()
    optimizer.step()


def test_phases_are_shaded_named_and_aligned_across_runs():
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(32, 64), nn.ReLU(), nn.Linear(64, 8))
    optimizer = torch.optim.Adam(model.parameters())
    inputs = torch.randn(16, 32)
    reports = []
    for _ in range(2):  # the first step has no zero_ and makes Adam's state: fewer and more ops
        with tl.measure_memory() as mem:
            train_step(model, optimizer, inputs)
        reports.append(mem)
    assert len(reports[0].timeline) != len(reports[1].timeline)
    scene = memory_scene(reports, labels=["1st step", "2nd step"], compact=False)
    texts = dict(scene.texts())
    names = [[texts[i] for i in texts if i.startswith(f"run{run}-phase-name-")] for run in range(2)]
    assert names[0] == ["forward", "backward", "Adam.step"]
    assert names[1] == ["Adam.zero_grad", "forward", "backward", "Adam.step"]
    shades = [
        {
            texts[i.replace("phase-", "phase-name-")]: scene.ids()[i]
            for i in scene.ids()
            if re.fullmatch(rf"run{run}-phase-\d+", i)
        }
        for run in range(2)
    ]
    for phase in ("forward", "backward", "Adam.step"):
        first, second = shades[0][phase], shades[1][phase]
        assert (first.x, first.style) == (second.x, second.style)  # aligned, one shade each
        if phase != "Adam.step":  # each run's last phase ends at its own last op
            assert first.w == second.w
    assert "phases forward" in scene.title and "Adam.step" in scene.title
    kinds = {texts[i] for i in texts if i.startswith("legend-")}
    assert {"activation", "gradient", "optimizer state", "phase (named above it)"} <= kinds


def test_the_bands_stand_on_what_was_held_before_and_memory_freed_from_it_leaves_that_band():
    x = torch.randn(1000)
    with tl.measure_memory() as mem:
        x = x.relu()  # the old x goes: 4,000 bytes from before the block
    scene = memory_scene(mem, compact=False)
    assert mem.allocated == 0 and mem.held_before >= 4000
    assert dict(scene.texts())["run0-held-before"] == f"held before: {timeline_module.short_bytes(mem.held_before)}"
    scale, zero_y = points_per_byte(scene)
    start = scene.ids()["run0-start-held"]  # the start column: what the block found
    assert start.style == "band-held before the block"
    assert (zero_y - start.y) / scale == pytest.approx(mem.held_before, abs=40)
    base = next(item for item in scene.items if item.id == "run0-band-0-0")
    assert base.style == "band-held before the block"
    assert "4,000 B (3.91 KiB) of it freed in the block" in memory_svg(
        mem, compact=False
    )  # the band's hover: x is gone
    above, below = column_heights(scene, 0, "end")
    assert column_top(scene, 0, "end") == pytest.approx(mem.held_before, abs=40) and below == 0  # relu's on top
    mem.held_before = None  # not known (a profiler was already running): the freed bytes are drawn below zero
    scene = memory_scene(mem, compact=False)
    above, below = column_heights(scene, 0, "end")
    assert above == pytest.approx(4000, abs=40) and below == pytest.approx(4000, abs=40)
    assert "from before the block" in dict(scene.texts()).values()


def test_many_allocations_are_grouped_by_kind():
    x = torch.randn(10)
    with tl.measure_memory() as mem:
        kept = [x + i for i in range(MAX_BANDS + 5)]
    scene = memory_scene(mem, compact=False)
    bands = [item for item in scene.items if isinstance(item, Polygon) and "-band-" in item.id]
    styles = [band.style for band in bands]
    assert len(styles) == len(set(styles)) and "band-unknown" in styles  # one band per kind
    assert f"<title>unknown: {MAX_BANDS + 5} allocations</title>" in memory_svg(mem, compact=False)
    del kept


def test_the_svg_names_each_op_and_band_on_hover():
    out_of_place, _ = measured_pair()
    document = memory_svg(out_of_place, labels=["x"], compact=False)
    assert document.count("<title>op ") == 3
    assert (
        "<title>op 2: relu; holds 524,288 B (512.00 KiB); made 1 allocation, 256.00 KiB; freed 1 allocation, "
        in document
    )
    assert re.search(r"<title>temporary, 262,144 B \(256\.00 KiB\), made by mul, freed after relu</title>", document)


def cuda_like_report():
    """A report as measure_memory('cuda') fills it: bands are storages' bytes, the timeline the allocator's."""
    report = MemoryReport(torch.device("cuda", 0), "CUDA caching allocator (torch.cuda.memory_allocated)")
    report.timeline = (("aten::relu", 400_556_032),)
    report.most_held = (400_556_032,)
    report.phases = (None,)
    report.allocations = (Allocation(400_000_000, 0, None, False, "unknown", "aten::relu", None),)
    report.allocated = report.peak = report.reserved = 400_556_032
    return report


def test_cuda_reports_draw_the_allocators_rounding_as_its_own_band():
    scene = memory_scene(cuda_like_report(), labels=["F.relu(t) on a GPU"], compact=False)
    styles = [item.style for item in scene.items if isinstance(item, Polygon)]
    assert styles == ["band-unknown", "band-allocator's rounding"]
    above, _ = column_heights(scene, 0, 0)
    assert above == pytest.approx(400_556_032, rel=1e-3)
    # 556,032 B under 382 MiB is under a point tall: drawn, but not in the legend (issue 22: a swatch for what
    # cannot be seen misleads)
    assert "allocator's rounding" not in dict(scene.texts()).values()
    assert "result (still referenced)" in dict(scene.texts()).values()


def test_a_cuda_peak_no_column_reached_is_drawn_across_the_ops():
    report = cuda_like_report()
    report.peak = 402_653_184  # a scratch block inside relu: the allocator's peak, not any op's end
    scene = memory_scene(report, compact=False)
    peak, frame = scene.ids()["run0-peak"], scene.ids()["run0-frame"]
    assert peak.points[0][0] < frame.x + 1 and peak.points[-1][0] > frame.x + frame.w - 1
    assert dict(scene.texts())["run0-peak-label"] == "peak 384.00 MiB inside an op"


def test_the_legend_says_what_puts_bytes_in_each_band():
    out_of_place, _ = measured_pair()
    document = memory_svg(out_of_place, compact=False)
    assert f"<title>{KINDS['temporary']}</title>" in document


def test_timeline_summary_extends_the_old_one():
    out_of_place, in_place = measured_pair()
    fig = draw_memory_timeline([out_of_place, in_place], labels=["out-of-place", "in-place"], compact=False)
    assert fig.summary.startswith("out-of-place: 3 ops, peak 524,288 B (512.00 KiB)")
    # the in-place peak is the 256 KiB temporary plus sum's scratch, whose size is torch's (12 B on 2.13, 68 B on 2.11)
    assert 262_144 < in_place.peak < 262_144 + 1024
    assert f"in-place: 3 ops, peak {tl.format_bytes(in_place.peak)}, leaves 4 B allocated" in fig.summary
    assert "largest band 262,144 B (256.00 KiB) (temporary, made by mul)" in fig.summary
    assert fig.summary == fig.scene.title
    assert [item.id for item in fig.scene.items if isinstance(item, Rect) and item.id.endswith("-frame")] == [
        "run0-frame",
        "run1-frame",
    ]


def test_summary_says_op_in_the_singular_for_one_op():
    x = torch.ones(1000)
    with tl.measure_memory() as one:
        y = x.neg()
    del y
    assert memory_timeline_summary([one], ["neg"]) == (
        "neg: 1 op, peak 4,000 B (3.91 KiB), leaves 4,000 B (3.91 KiB) allocated, "
        "largest band 4,000 B (3.91 KiB) (result (still referenced), made by neg)"
    )


def test_the_summary_names_a_kind_in_the_pictures_words():
    x = torch.ones(1000)
    with tl.measure_memory() as made:
        y = x.clone()
    fig = draw_memory_timeline(made, compact=False)
    legend = dict(fig.scene.texts())["legend-unknown"]
    assert legend == "result (still referenced)"
    assert f"({legend}, made by clone)" in fig.summary and "kind unknown" not in fig.summary
    plt.close(fig)
    del y


def test_timeline_draws_on_a_given_axes():
    out_of_place, _ = measured_pair()
    fig, ax = plt.subplots()
    assert draw_memory_timeline(out_of_place, ax=ax) is fig
    plt.close(fig)


def test_timeline_bad_input():
    with pytest.raises(TypeError, match="reports"):
        draw_memory_timeline([1])
    with pytest.raises(TypeError, match="reports"):
        draw_memory_timeline([])
    report, _ = measured_pair()
    with pytest.raises(ValueError, match="labels"):
        draw_memory_timeline([report], labels=["a", "b"])
    with pytest.raises(TypeError, match="show_ops"):
        memory_scene(report, show_ops="yes")
    with tl.measure_memory() as unfinished:
        with pytest.raises(ValueError, match="still measuring"):
            draw_memory_timeline(unfinished)


def test_timeline_is_a_bare_figure_that_shows_once():
    # Not registered with pyplot (a cell returning it shows it once, no too-many-figures warning) and
    # still displayable: it carries its own PNG formatter.
    out_of_place, _ = measured_pair()
    before = plt.get_fignums()
    fig = draw_memory_timeline(out_of_place)
    assert plt.get_fignums() == before
    assert fig._repr_png_()[0].startswith(b"\x89PNG")


# ------------------------------------------------------------- CUDA: allocated vs reserved vs the driver
RULES = "computed from the allocator's rules (no GPU here)"


@pytest.mark.parametrize(
    ("figures", "error", "name"),
    [
        ((400_000_000, 0, 0), ValueError, "allocated"),  # torch.cuda.memory_allocated() without CUDA: 0
        ((400_000_000, 400_556_032, 0), ValueError, "reserved"),
        ((0, 0, 0), ValueError, "requested"),
        ((400_000_000, 400_556_032, 400_556_032, 1), ValueError, "driver"),
        ((4.0, 4, 4), TypeError, "requested"),
    ],
)
def test_the_cuda_view_refuses_figures_that_cannot_be_cudas(figures, error, name):
    with pytest.raises(error, match=f"^{name}"):
        tl.draw_cuda_memory(*figures, source=RULES)


def test_a_reserved_growth_below_allocated_names_a_warm_cache_and_a_machine_without_cuda():
    """On a GPU, a tensor that fits a cached segment grows memory_allocated() and not memory_reserved()
    (c10/cuda/CUDACachingAllocator.cpp serves it from a free cached block): not only a machine without CUDA."""
    with pytest.raises(ValueError) as refused:
        tl.draw_cuda_memory(4096, 4096, 0, source="measured on cuda:0")
    message = str(refused.value)
    assert message.startswith("reserved (0) is less than the row under it (4,096): ")
    assert "warm cache" in message and "torch.cuda.empty_cache()" in message
    assert "machine without CUDA" in message
    with pytest.raises(ValueError, match=r"^allocated \(0\) .*without CUDA"):
        tl.draw_cuda_memory(4096, 0, 0, source="measured on cuda:0")


def test_the_cuda_view_says_where_its_figures_come_from():
    with pytest.raises(TypeError, match="source"):
        tl.draw_cuda_memory(4, 512, 2**21, source="")
    with pytest.raises(TypeError, match="^ax must be"):
        tl.draw_cuda_memory(4, 512, 2**21, source=RULES, ax=1)


@pytest.mark.parametrize("held", [0, 100_000_000], ids=["little held before", "400 MB held before"])
def test_a_block_that_allocates_nothing_draws_and_says_so(held):
    x = torch.arange(6.0)
    big = torch.empty(held)  # what is held before sets the axis's unit (the process's other tensors do too)
    for make in (lambda: None, lambda: torch.empty(0), lambda: x.view(2, 3)):
        with tl.measure_memory() as report:
            make()
        fig = tl.draw_memory_timeline(report, compact=False)
        assert "peak 0 B" in fig.summary and "leaves 0 B allocated" in fig.summary
        assert "nothing allocated" in [text for _, text in fig.scene.texts()]
        ticks = [text for ident, text in fig.scene.texts() if ident.startswith("run0-tick-label-")]
        assert ticks and all(re.fullmatch(r"\d+ (B|KiB|MiB|GiB)", tick) for tick in ticks)  # whole: no 0.25 B
    del big


@pytest.mark.parametrize("high", [1, 2, 3, 7, 9, 25, 999])
def test_byte_ticks_are_whole_bytes(high):
    ticks = timeline_module._byte_ticks(0, high)
    assert ticks[0] == (0, "0 B") and len(ticks) >= 2
    for value, label in ticks:
        assert label == f"{value} B" and 0 <= value <= high


class _CountingTuple(tuple):
    """A tuple that counts how often it is walked: the work a picture does over a report's allocations."""

    walks = 0

    def __iter__(self):
        type(self).walks += 1
        return super().__iter__()


def test_work_over_allocations_does_not_grow_with_the_number_of_ops():
    # Issue 20 (fuzz H2): every op column's hover walked every allocation (ops x allocations: a block of 40,000 ops
    # took 201 s). Now the allocations are walked a fixed number of times, however many ops there are.
    x = torch.ones(10)
    walks = {}
    for ops in (60, 600):
        with tl.measure_memory() as mem:
            kept = [x * 2 for _ in range(ops)][::3]
        del kept
        mem.allocations = _CountingTuple(mem.allocations)
        _CountingTuple.walks = 0
        svg_text = memory_svg(mem, compact=False)
        plt.close(draw_memory_timeline(mem))
        walks[ops] = _CountingTuple.walks
        assert svg_text.count("<title>op ") == len(mem.timeline)  # every column still says what it did
    assert walks[600] == walks[60] <= 12


def test_op_hover_counts_what_each_column_made_and_freed():
    x = torch.ones(10)
    with tl.measure_memory() as mem:
        y = x * 2
        z = y + 1
        del y
        w = z * 3
    for column in range(len(mem.timeline)):
        made = [a.nbytes for a in mem.allocations if a.allocated_at == column]
        freed = [a.nbytes for a in mem.allocations if a.freed_at == column]
        text = timeline_module._op_hover(mem, column)
        assert (f"made {len(made)} allocation" in text) == bool(made)
        assert (f"freed {len(freed)} allocation" in text) == bool(freed)
    del z, w


def test_the_driver_row_is_growth_the_driver_saw_not_the_context():
    """draw_cuda_memory's driver figure is how much the device's used memory grew: the part above `reserved` is
    whatever else the driver gave out meanwhile, not necessarily the CUDA context (fix-06 review)."""
    from tutorial_lib.pictures.timeline import cuda_memory_scene, cuda_memory_summary

    summary = cuda_memory_summary(400_000_000, 400_556_032, 400_556_032, 400_556_032 + 2 * 2**20, source="s")
    assert "more the driver gave out meanwhile" in summary and "the CUDA context and other" not in summary
    texts = [
        item.text
        for item in cuda_memory_scene(400_000_000, 400_556_032, 400_556_032, 402_653_184, source="s").items
        if hasattr(item, "text")
    ]
    assert any("more the driver gave out" in text for text in texts)


def test_a_block_of_a_few_ops_is_two_bars_a_run_whose_pieces_are_the_reports_bytes():
    """Issue 22: a one-op block was a 650-px frame holding one grey 'unknown' rectangle; now two bars a run (at
    the peak, at the end) on one byte scale, standing on what was held before, the result named as one."""
    x = torch.randn(1000)
    with tl.measure_memory() as out_of_place:
        y = x.relu()
    with tl.measure_memory() as in_place:
        x.relu_()
    scene = memory_scene([out_of_place, in_place], labels=["x.relu()", "x.relu_()"])
    ids, texts = scene.ids(), dict(scene.texts())
    assert not [i for i in ids if i.endswith("-frame")]  # no chart
    bars = {}
    for run in (0, 1):
        for row in ("peak", "end"):
            pieces = [item for i, item in ids.items() if i.startswith(f"run{run}-{row}-") and isinstance(item, Rect)]
            assert all(a.x + a.w == pytest.approx(b.x) for a, b in zip(pieces, pieces[1:]))  # side by side
            bars[run, row] = pieces
    scale = bars[0, "peak"][0].w / out_of_place.held_before  # every bar starts with what was held before
    for run, report in enumerate((out_of_place, in_place)):
        assert bars[run, "peak"][0].style == "band-held before the block"
        assert sum(p.w for p in bars[run, "peak"]) == pytest.approx((report.held_before + report.peak) * scale)
        assert sum(p.w for p in bars[run, "end"]) == pytest.approx((report.held_before + report.allocated) * scale)
    assert [p.style for p in bars[0, "end"]] == ["band-held before the block", "band-unknown"]
    assert bars[0, "end"][1].w == pytest.approx(4000 * scale)
    assert texts["run0-peak-note"] == "peak +3.91 KiB at relu" and texts["run1-peak-note"] == "peak +0 B"
    assert texts["legend-unknown"] == "result (still referenced)"
    assert scene.styles["band-unknown"].fill != scene.styles["band-held before the block"].fill
    assert scene.height < 200
    assert [i for i in memory_scene(out_of_place, compact=False).ids() if i.endswith("-frame")] == ["run0-frame"]
    with pytest.raises(TypeError, match="compact"):
        memory_scene(out_of_place, compact="yes")
    del y


def test_a_baseline_that_dwarfs_the_block_breaks_the_byte_axis_and_the_bytes_still_read_true():
    big = torch.empty(10_000_000)  # 40 MB held before: the block's 4,000 B would be a hairline on it
    x = torch.randn(1000)
    with tl.measure_memory() as mem:
        y = x * 2
    scene = memory_scene(mem, compact=False)
    ids = scene.ids()
    assert "run0-axis-break-0" in ids
    ticks = [t for i, t in scene.texts() if i.startswith("run0-tick-label-")]
    assert ticks[0] != "0 B"  # the axis starts above 0, and says where
    assert column_top(scene, 0, "end") == pytest.approx(mem.held_before + 4000, rel=1e-6)
    scale, zero_y = points_per_byte(scene)
    frame = ids["run0-frame"]
    assert (zero_y - frame.y) / scale < 2 * mem.held_before  # the block's bytes fill the plot, not a sliver
    band = next(item for item in scene.items if isinstance(item, Polygon) and item.style == "band-unknown")
    assert max(p[1] for p in band.points) - min(p[1] for p in band.points) > 20  # 4,000 B, tall enough to see
    del big, y


def test_the_legend_names_only_what_is_at_least_a_point_tall():
    x = torch.randn(1000, 1000)
    with tl.measure_memory() as mem:
        total = (x * 2).sum()  # 4,000,000 B of temporary, 4 B of result, a few bytes of scratch
    legend = [t for i, t in memory_scene(mem, compact=False).texts() if i.startswith("legend-")]
    assert "temporary" in legend and "result (still referenced)" not in legend
    assert "inside the op (scratch)" not in legend
    compact = [t for i, t in memory_scene(mem).texts() if i.startswith("legend-")]
    assert "temporary" in compact and "result (still referenced)" not in compact
    del total


def test_a_shorter_run_ends_its_bands_and_phases_at_its_own_last_op():
    """Two runs on one axis: the run with fewer ops draws nothing between its last op and the end column."""
    x = torch.randn(64, 64)
    with tl.measure_memory() as short:
        with torch.autograd.profiler.record_function("work"):
            kept = x * 2
            kept = kept + 1
    with tl.measure_memory() as long:
        with torch.autograd.profiler.record_function("work"):
            kept_too = x * 2
            for _ in range(8):
                kept_too = kept_too + 1
    del kept, kept_too
    assert len(short.timeline) < len(long.timeline)
    scene = memory_scene([short, long], labels=["short", "long"], compact=False)
    ids = scene.ids()
    last = ids[f"run0-op-{len(short.timeline) - 1}"]
    last_right, end_left = last.x + last.w, ids["run0-end"].x
    assert end_left - last_right > 20  # the short run's ops stop well before the shared end column
    for item in scene.items:
        if isinstance(item, Polygon) and item.id.startswith("run0-band-"):
            xs = [x for x, _ in item.points]
            assert max(xs) <= last_right + 1e-6 or min(xs) >= end_left - 1e-6, item.id  # none spans the gap
    phases = [item for item in scene.items if isinstance(item, Rect) and re.fullmatch(r"run0-phase-\d+", item.id)]
    assert phases and max(item.x + item.w for item in phases) <= last_right + 1e-6
    long_phases = [item for item in scene.items if isinstance(item, Rect) and re.fullmatch(r"run1-phase-\d+", item.id)]
    assert max(item.x + item.w for item in long_phases) > last_right + 20  # the longer run's shading goes on
    assert "run0-band-0-1" in ids  # the end column still draws what the short run left, on its own


def test_panels_on_one_op_axis_mark_the_same_round_op_numbers_and_each_runs_last_op():
    # Review 3, item 7: chapter 6's two steps (121 and 103 ops) were marked 50, 100 against 20, 40, …, 100, and
    # the second step's last op (103) had no number: 100 stood too close to it.
    reports = []
    for count in (121, 103):
        x = torch.randn(100)
        with tl.measure_memory() as mem:
            for _ in range(count):
                x = x + 1
        assert len(mem.timeline) == count
        reports.append(mem)
    scene = memory_scene(reports, compact=False)
    texts = dict(scene.texts())
    marked = []
    for run, report in enumerate(reports):
        numbers = [int(m.group(1)) for i in texts if (m := re.fullmatch(rf"run{run}-op-number-(\d+)", i))]
        assert len(report.timeline) in numbers  # each run's last op has its number
        last = f"run{run}-op-number-{len(report.timeline)}"
        column, tick, label = (
            scene.ids()[i] for i in (f"run{run}-op-{len(report.timeline) - 1}", last + "-tick", last)
        )
        assert column.x <= tick.points[0][0] <= column.x + column.w  # its tick under its op's column
        half = text_width(label.text, "sans", scene.styles[label.style].size) / 2
        assert label.x - half <= tick.points[0][0] <= label.x + half  # its number over its tick
        assert label.x + half < scene.ids()[f"run{run}-end-label"].x  # clear of "end"
        marked.append({n for n in numbers if n not in (1, len(report.timeline))})
    step = min(marked[0] | marked[1])
    assert all(n % step == 0 for n in marked[0] | marked[1])  # one step for both panels
    assert marked[1] <= marked[0]  # the shorter run marks the same round numbers, as far as it goes
