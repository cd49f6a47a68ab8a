"""What reading the CPU allocator costs `measure_memory`, against the aten-level watcher it replaced.

Prints two tables. Time: the median of each workload run plain, under the aten-level watcher (what
`measure_memory` did on the CPU before issue 13, still used when a profiler is already running:
`tutorial_lib.facts.memory._measure_aten_outputs`), and under today's `measure_memory` (the profiler's memory
events plus a dispatch mode that names the ops). Figures: the peak each of the two reports, next to the allocator's own
(`torch.profiler.profile(profile_memory=True)`, added up here). A third table: what drawing a report's timeline
costs (its scene, the matplotlib figure with its PNG, the SVG), by the number of ops and allocations.

A fourth table (issue 20): what `measure_memory` costs on a training step after the first (`optimizer.zero_grad()`,
forward, backward, `step()`), in this process as it is and with as many Python objects as a notebook kernel holds,
with the figures it reports next to the allocator's own (the profiler started before the model was made).
`measure_memory` now lists every storage alive when a block starts: blocks in a row look only at the objects made
since the last block; a block after a collection of Python's oldest generation looks at every object ("after
gc"). `--step` prints only that table; it needs nothing private, so the same command with `PYTHONPATH` pointing at
an older checkout measures that one (how the README's before/after table was made).

Run with `make bench` or `python benchmarks/bench_measure_memory.py`. Timings are never asserted in tests.
"""

import contextlib
import os
import sys
from pathlib import Path

import torch
from torch import nn

import tutorial_lib
from tutorial_lib import draw_memory_timeline, measure_memory
from tutorial_lib.pictures.render_mpl import png_bytes
from tutorial_lib.pictures.timeline import memory_scene, memory_svg

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))
from allocator_truth import allocator_figures, allocator_figures_of_block  # noqa: E402  (the tests' ground truth)
from timing import median_seconds  # noqa: E402  (benchmarks/timing.py, beside this script)

os.environ.setdefault("KINETO_LOG_LEVEL", "6")
REPEATS = 15


def aten_level():
    from tutorial_lib.facts.memory import _measure_aten_outputs

    return contextlib.contextmanager(_measure_aten_outputs)(torch.device("cpu"))


def workloads():
    torch.manual_seed(0)
    small = torch.randn(10)
    big = torch.randn(1000, 1000)
    model = nn.Sequential(nn.Linear(256, 512), nn.ReLU(), nn.Linear(512, 512), nn.ReLU(), nn.Linear(512, 10))
    optimizer = torch.optim.SGD(model.parameters(), lr=0.01)
    inputs, targets = torch.randn(64, 256), torch.randint(0, 10, (64,))

    def training_step():
        optimizer.zero_grad()
        nn.functional.cross_entropy(model(inputs), targets).backward()
        optimizer.step()

    def hundred_small_ops():
        for _ in range(100):
            small + 1

    return [
        ("empty block", lambda: None),
        ("100 ops on 10 floats", hundred_small_ops),
        ("relu of 10^6 floats", lambda: big.relu()),
        ("x[x > 0], 10^6 floats", lambda: big[big > 0]),
        ("x.round().unique(), 10^6", lambda: big.round().unique()),
        ("MLP training step, batch 64", training_step),
    ]


def median_ms(run, under=None):
    def once():
        if under is None:
            run()
        else:
            with under():
                run()

    return median_seconds(once, REPEATS) * 1000


def allocator_peak(run):
    """The peak the CPU allocator's own events show (the tests' ground truth, tests/allocator_truth.py)."""
    return allocator_figures(run)[0].peak


def main():
    rows = []
    for label, run in workloads():
        plain = median_ms(run)
        old = median_ms(run, aten_level)
        new = median_ms(run, measure_memory)
        with aten_level() as old_report:
            run()
        with measure_memory() as new_report:
            run()
        rows.append((label, plain, old, new, old_report.peak, new_report.peak, allocator_peak(run)))
    print(f"CPU, torch {torch.__version__}, {torch.get_num_threads()} threads, median of {REPEATS} runs")
    print(f"{'workload':<30} {'plain ms':>9} {'aten-level ms':>14} {'allocator ms':>13} {'new / old':>10}")
    for label, plain, old, new, *_ in rows:
        print(f"{label:<30} {plain:>9.3f} {old:>14.3f} {new:>13.3f} {new / old:>10.2f}")
    print()
    print(f"{'workload':<30} {'aten-level peak':>16} {'allocator peak':>15} {'profiler says':>14}")
    for label, *_, old_peak, new_peak, truth in rows:
        print(f"{label:<30} {old_peak:>16,} {new_peak:>15,} {truth:>14,}")
    print()
    print(f"{'drawing the timeline of':<30} {'ops':>5} {'allocs':>7} {'scene ms':>9} {'PNG ms':>8} {'SVG ms':>8}")
    for label, run in workloads()[1:]:
        with measure_memory() as report:
            run()
        scene = median_ms(lambda: memory_scene(report))
        png = median_ms(lambda: png_bytes(draw_memory_timeline(report)))
        svg = median_ms(lambda: memory_svg(report))
        ops, allocations = len(report.timeline), len(report.allocations)
        print(f"{label:<30} {ops:>5} {allocations:>7} {scene:>9.1f} {png:>8.1f} {svg:>8.1f}")
    print()
    training_step_table()


def training_state():
    """The MLP of the first table, its optimizer and one step already taken: gradients exist."""
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(256, 512), nn.ReLU(), nn.Linear(512, 512), nn.ReLU(), nn.Linear(512, 10))
    optimizer = torch.optim.Adam(model.parameters())
    data = torch.randn(64, 256), torch.randint(0, 10, (64,))
    training_step(model, optimizer, data)
    return model, optimizer, data


def training_step(model, optimizer, data):
    optimizer.zero_grad()  # the default, set_to_none=True: frees the gradients of the step before
    nn.functional.cross_entropy(model(data[0]), data[1]).backward()
    optimizer.step()


def training_step_table():
    import gc
    import importlib
    import importlib.util

    import IPython  # noqa: F401
    import matplotlib.pyplot  # noqa: F401  (a notebook kernel has imported these)

    print(f"training step (Adam, MLP 256-512-512-10, batch 64), tutorial_lib from {Path(tutorial_lib.__file__).parent}")
    print(
        f"{'process':<34} {'objects':>8} {'plain ms':>9} {'in a row ms':>12} {'after gc ms':>12} {'allocated':>10} "
        f"{'peak':>10} {'allocator says':>18}"
    )
    state = training_state()
    truth, _, _ = allocator_figures_of_block(training_state, lambda made: training_step(*made))
    ballast = []

    def after_a_full_collection():
        # What a collection of the oldest generation does to the next block: it looks at every object again.
        if importlib.util.find_spec("tutorial_lib.facts.live_storages") is not None:  # absent before issue 20
            importlib.import_module("tutorial_lib.facts.live_storages")._inventory.collections = None
        with measure_memory():
            training_step(*state)

    for label, extra in (("as it is", 0), ("with a notebook's 300,000 objects", 300_000)):
        ballast.extend([index] for index in range(extra))
        objects = len(gc.get_objects())
        plain = median_ms(lambda: training_step(*state))
        in_a_row = median_ms(lambda: training_step(*state), measure_memory)
        after_gc = median_ms(after_a_full_collection)
        with measure_memory() as report:
            training_step(*state)
        said = f"{truth.allocated:,} / {truth.peak:,}"
        print(
            f"{label:<34} {objects:>8,} {plain:>9.2f} {in_a_row:>12.2f} {after_gc:>12.2f} {report.allocated:>10,} "
            f"{report.peak:>10,} {said:>18}"
        )


if __name__ == "__main__":
    if "--step" in sys.argv[1:]:
        training_step_table()
    else:
        main()
