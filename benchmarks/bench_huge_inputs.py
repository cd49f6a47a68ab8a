"""How long the public functions take on huge inputs (issue 20, section 4): a 10^8-element tensor, 64 dimensions,
a block of 10^5 ops. The target: under a second each, or a capped answer.

Run: ``.venv/bin/python benchmarks/bench_huge_inputs.py [--repeats N] [--ops N ...]``. Prints one row per case: the
median seconds over N calls (default 3, after one warm-up call). The timeline rows draw a report made for the
benchmark (``n`` ops, one 40-byte allocation each, every tenth kept to the end: what a loop of small ops leaves),
so that measuring the block itself (``measure_memory``, about a millisecond per op) is not in the figure.
"""

from __future__ import annotations

import argparse
import platform
import random
import sys
from pathlib import Path

import matplotlib

matplotlib.use("Agg")

sys.path.insert(0, str(Path(__file__).resolve().parent))

import matplotlib.pyplot as plt  # noqa: E402
import torch  # noqa: E402
from timing import median_seconds  # noqa: E402

import tutorial_lib as tl  # noqa: E402
from tutorial_lib.facts.memory import Allocation, MemoryReport  # noqa: E402


def huge_graph_tensor() -> torch.Tensor:
    """10^8 elements over 4 bytes, with a graph: the long non-contiguous dimension preview() once copied."""
    x = torch.zeros(1, requires_grad=True)
    return (x * 2).expand(10**8)


def subset_sum_pair(dims: int):
    """Two views of one (never touched) storage whose overlap is a subset sum over ``dims`` random strides."""
    rng = random.Random(0)
    strides = [rng.randrange(2**26, 2**27) * 2 for _ in range(dims)]
    span = sum(strides)
    base = torch.empty(span + 2, dtype=torch.uint8)
    return base.as_strided((2,) * dims, strides), base.as_strided((1,), (1,), (span // 2) & ~1)  # even: no gcd shortcut


def many_op_report(ops: int) -> MemoryReport:
    """A report of ``ops`` ops, each making 40 bytes, every tenth kept to the end, the others freed by the next op."""
    report = MemoryReport(torch.device("cpu"), "benchmark")
    allocations, held, timeline = [], 0, []
    for op in range(ops):
        kept = op % 10 == 0
        allocations.append(
            Allocation(
                40,
                op,
                None if kept else min(op + 1, ops - 1),
                False,
                "temporary",
                "aten::mul",
                None if kept else "aten::mul",
            )
        )
        held += 40 if kept else 0
        timeline.append(("aten::mul", held))
    report.allocated, report.peak = held, held + 40
    report.timeline, report.allocations = tuple(timeline), tuple(allocations)
    report.phases, report.most_held = (None,) * ops, tuple(h + 40 for _, h in timeline)
    return report


def cases(op_counts, dim_counts):
    y = huge_graph_tensor()
    sixty_four = torch.zeros([2] * 24 + [1] * 40).permute(*reversed(range(64)))
    yield "inplace_hazards: expand(10^8) with a graph", lambda: tl.inplace_hazards(y)
    yield "autograd_graph: expand(10^8) with a graph", lambda: tl.autograd_graph(y)
    yield "graph_svg(show_values=True): expand(10^8)", lambda: tl.graph_svg(y, show_values=True)
    yield "layout_summary: expand(10^8) and a slice", lambda: tl.layout_summary(y.detach(), y.detach()[::1000])
    yield "layout_summary: 64 dimensions", lambda: tl.layout_summary(sixty_four)
    yield "shares_memory: 64 dimensions, permuted", lambda: tl.shares_memory(sixty_four, sixty_four[..., 1:, :])
    for dims in dim_counts:
        many, one = subset_sum_pair(dims)
        yield (
            f"shares_memory: subset sum, {dims} random strides",
            lambda many=many, one=one: tl.shares_memory(many, one),
        )
    for ops in op_counts:
        report = many_op_report(ops)
        yield f"draw_memory_timeline: {ops:,} ops", lambda report=report: plt.close(tl.draw_memory_timeline(report))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--ops", type=int, nargs="*", default=[5_000, 40_000, 100_000])
    parser.add_argument("--dims", type=int, nargs="*", default=[24, 30, 40])
    args = parser.parse_args()
    print(f"torch {torch.__version__}, {platform.processor() or platform.machine()}, median of {args.repeats}")
    print("| case | median s |\n|---|---|")
    for name, run in cases(args.ops, args.dims):
        print(f"| {name} | {median_seconds(run, args.repeats):.3f} |", flush=True)


if __name__ == "__main__":
    main()
