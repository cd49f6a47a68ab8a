"""What the instruments cost on a training step, on the CPU or on a GPU, and what `measure_memory` reports there.

One table per device: a training step (`optimizer.zero_grad()`, forward, backward, Adam `step()`) of two small
models, timed plain, inside `measure_memory()` and inside `watch_inplace()` (median of many steps, after one that
is not counted; on CUDA each step ends with `torch.cuda.synchronize()`, so the time is the step's whole time). Next
to them, what `measure_memory` reports for one more step (allocated, peak) and what the allocator itself says
(CUDA: `torch.cuda.memory_allocated()` before and after, `max_memory_allocated()` after `reset_peak_memory_stats()`;
CPU: the profiler's own events, the tests' ground truth). A GPU step of a small model takes about a millisecond,
so the watchers' per-op cost decides whether people leave them on there.

Usage: python benchmarks/bench_device_step.py [--device cpu|cuda] [--repeats N]
A column whose instrument raises says "crashed" (the checkout before issue 21: watch_inplace on CUDA's backward).
(the default device is cuda when one is present). It needs nothing private: with PYTHONPATH pointing at an older
checkout it measures that one. Timings are never asserted in tests.
"""

from __future__ import annotations

import argparse
import sys
from copy import deepcopy
from pathlib import Path

import torch
from torch import nn

import tutorial_lib
from tutorial_lib import measure_memory, watch_inplace

sys.path.insert(0, str(Path(__file__).resolve().parent))
from timing import median_seconds  # noqa: E402  (benchmarks/timing.py, beside this script)


def models():
    """(name, model, a batch): an MLP and a small convolutional net, each a few dozen ops per step."""
    torch.manual_seed(0)
    mlp = nn.Sequential(nn.Linear(256, 512), nn.ReLU(), nn.Linear(512, 512), nn.ReLU(), nn.Linear(512, 10))
    conv = nn.Sequential(
        nn.Conv2d(3, 32, 3, padding=1), nn.BatchNorm2d(32), nn.ReLU(inplace=True),
        nn.Conv2d(32, 64, 3, padding=1), nn.BatchNorm2d(64), nn.ReLU(inplace=True),
        nn.AdaptiveAvgPool2d(1), nn.Flatten(), nn.Linear(64, 10),
    )  # fmt: skip
    return [
        ("MLP 256-512-512-10, batch 64", mlp, (torch.randn(64, 256), torch.randint(0, 10, (64,)))),
        ("conv net 3-32-64, 32x32, batch 32", conv, (torch.randn(32, 3, 32, 32), torch.randint(0, 10, (32,)))),
    ]


def step(model, optimizer, data, device):
    optimizer.zero_grad()  # the default, set_to_none=True
    nn.functional.cross_entropy(model(data[0]), data[1]).backward()
    optimizer.step()
    if device.type == "cuda":
        torch.cuda.synchronize()


def allocator_says(model, optimizer, data, device) -> tuple[int, int]:
    """(allocated, peak) of one step, as the allocator itself counts them."""
    if device.type == "cuda":
        torch.cuda.synchronize()
        before = torch.cuda.memory_allocated(device)
        torch.cuda.reset_peak_memory_stats(device)
        step(model, optimizer, data, device)
        return torch.cuda.memory_allocated(device) - before, torch.cuda.max_memory_allocated(device) - before
    sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))
    from allocator_truth import allocator_figures_of_block  # the tests' ground truth (profiler events)

    def made():  # a copy made under the profiler, so that zero_grad's frees of its gradients are seen too
        copy = deepcopy(model)
        copy_optimizer = torch.optim.Adam(copy.parameters())
        step(copy, copy_optimizer, data, device)
        return copy, copy_optimizer, data

    truth, _, _ = allocator_figures_of_block(made, lambda state: step(*state, device))
    return truth.allocated, truth.peak


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--device", choices=["cpu", "cuda"], default="cuda" if torch.cuda.is_available() else "cpu")
    parser.add_argument("--repeats", type=int, default=50)
    args = parser.parse_args(argv)
    device = torch.device(args.device)
    if device.type == "cuda" and not torch.cuda.is_available():
        parser.error("--device cuda: no CUDA device here")
    name = torch.cuda.get_device_name(device) if device.type == "cuda" else "CPU"
    print(f"{name}, torch {torch.__version__}, tutorial_lib from {Path(tutorial_lib.__file__).parent}")
    print(
        f"{'training step':<36} {'plain ms':>9} {'measure_memory ms':>18} {'watch_inplace ms':>17} "
        f"{'reported allocated / peak':>28} {'allocator says':>24}"
    )
    for label, model, batch in models():
        model = model.to(device)
        data = tuple(t.to(device) for t in batch)
        optimizer = torch.optim.Adam(model.parameters())
        step(model, optimizer, data, device)  # the optimizer's state and the first gradients exist

        def timed(around=None):
            def run():
                if around is None:
                    step(model, optimizer, data, device)
                else:
                    with around():
                        step(model, optimizer, data, device)

            try:
                return f"{median_seconds(run, args.repeats) * 1000:.2f}"
            except (RuntimeError, ValueError) as error:  # older watch_inplace on CUDA: "call stack is not deep enough"
                print(f"  ({label}: {type(error).__name__}: {error})", file=sys.stderr)
                return "crashed"

        plain, measured, watched = timed(), timed(lambda: measure_memory(device)), timed(watch_inplace)
        with measure_memory(device) as report:
            step(model, optimizer, data, device)
        allocated, peak = allocator_says(model, optimizer, data, device)
        print(
            f"{label:<36} {plain:>9} {measured:>18} {watched:>17} "
            f"{f'{report.allocated:,} / {report.peak:,}':>28} {f'{allocated:,} / {peak:,}':>24}"
        )
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
