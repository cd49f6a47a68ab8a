"""How long one explorer update takes (the budget is 50 ms median), and the pictures behind it.

Run: ``.venv/bin/python benchmarks/bench_explorers.py [--repeats N]``. Prints one table row per case:
the median and slowest milliseconds over N (default 30, at least 20) updates. Each explorer update is
one widget change, as a learner makes it (setting ``.value`` runs ``update()``), and includes building
the tensor, the layout picture, its SVG, and the table. For comparison, the same picture drawn with
matplotlib and rasterised to PNG (what a PNG-in-an-Image-widget explorer would pay on every change).
"""

from __future__ import annotations

import argparse
import platform
import statistics
import time

import matplotlib

matplotlib.use("Agg")

import torch  # noqa: E402
from matplotlib.figure import Figure  # noqa: E402

from tutorial_lib.explorers.layout_explorers import OPERATIONS, stride_explorer, view_copy_explorer  # noqa: E402
from tutorial_lib.pictures.layout_picture import draw_layout, layout_picture, layout_scene  # noqa: E402
from tutorial_lib.pictures.render_mpl import png_bytes, render  # noqa: E402

# Settings a learner steps through in the stride explorer: (widget, value), one update each.
STRIDE_STEPS = [
    ("stride", "1, 3"),
    ("shape", "4, 3"),
    ("stride", "1, 4"),
    ("offset", 1),
    ("offset", 0),
    ("shape", "2, 2"),
    ("offset", 5),
    ("stride", "0, 1"),
    ("offset", 0),
    ("shape", "3, 4"),
    ("stride", "4, 1"),
    ("dtype", "int16"),
    ("dtype", "float32"),
    ("offset", 1),  # out of bounds: the message path
    ("offset", 0),
]


def timed(step, repeats: int) -> list[float]:
    """Milliseconds for each of ``repeats`` calls of ``step(i)``."""
    times = []
    for i in range(repeats):
        start = time.perf_counter()
        step(i)
        times.append((time.perf_counter() - start) * 1000)
    return times


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=30)
    repeats = max(20, parser.parse_args().repeats)

    rows = []

    explorer = stride_explorer()

    def stride_step(i):
        widget, value = STRIDE_STEPS[i % len(STRIDE_STEPS)]
        getattr(explorer, widget).value = value

    rows.append(("stride_explorer: one widget change (SVG picture + table)", timed(stride_step, repeats)))

    big = stride_explorer(storage_size=4096)
    big.shape.value, big.stride.value = "64, 64", "64, 1"

    def big_step(i):
        big.stride.value = "1, 64" if i % 2 == 0 else "64, 1"

    rows.append(("stride_explorer(4096): 64x64 <-> transpose", timed(big_step, repeats)))

    copies = view_copy_explorer()

    def copy_step(i):
        copies.operation.value = OPERATIONS[(i + 1) % len(OPERATIONS)]

    rows.append(("view_copy_explorer: one operation change", timed(copy_step, repeats)))

    compared = view_copy_explorer()
    compared.compare.value = "x.t().contiguous()"

    def compare_step(i):
        compared.operation.value = OPERATIONS[(i + 1) % len(OPERATIONS)]

    rows.append(("view_copy_explorer: one change, two operations side by side", timed(compare_step, repeats)))

    from tutorial_lib import GraphStepper

    stepper = GraphStepper(
        [
            ("a leaf", "x = torch.tensor([1.0, 2.0, 3.0], requires_grad=True)"),
            ("exp saves its result", "a = x.exp()"),
            ("change a in place", "a.mul_(2)"),
            ("use a", "y = (a * x).sum()"),
            ("backward fails", "y.backward()"),
        ]
    )

    _ = stepper.widget  # every move refreshes the widget: listing, picture (inline SVG) and table

    def stepper_step(i):
        # Next (run one statement, snapshot graph and hazards, what changed, the widget's listing, SVG and
        # table); back to step 1 every fifth update (a rerun from scratch).
        if stepper.position == len(stepper.steps):
            stepper.goto(1)
        stepper.step_forward()

    rows.append(("GraphStepper: Next (step, graph, hazards, listing, SVG, table)", timed(stepper_step, repeats)))

    def figure_step(i):
        stride_step(i)
        if explorer.picture is not None:
            png_bytes(explorer.figure, dpi=72)

    rows.append(("  for comparison: stride change + matplotlib redraw + PNG", timed(figure_step, repeats)))

    matrix = torch.arange(12.0).reshape(3, 4)
    figure = Figure()
    picture = layout_picture(matrix, matrix.t(), matrix[1:, 1:3])
    rows.append(
        (
            "  render(layout_scene(3x4, .t(), slice), fig=one figure)",
            timed(lambda i: render(layout_scene(picture), fig=figure), repeats),
        )
    )

    huge = torch.empty(10**8)
    parts = (huge, huge[5 * 10**7 : 5 * 10**7 + 10], huge[::1000])
    rows.append(
        ("draw_layout: 10^8 elements + slice + ::1000 (no render)", timed(lambda i: draw_layout(*parts), repeats))
    )

    width = max(len(name) for name, _ in rows)
    print(
        f"torch {torch.__version__}, matplotlib {matplotlib.__version__}, "
        f"{platform.processor() or platform.machine()}, "
        f"{repeats} updates each"
    )
    print(f"{'case'.ljust(width)}  median ms  max ms")
    print(f"{'-' * width}  ---------  ------")
    for name, times in rows:
        print(f"{name.ljust(width)}  {statistics.median(times):9.1f}  {max(times):6.1f}")


if __name__ == "__main__":
    main()
