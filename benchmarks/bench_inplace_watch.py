"""What ``watch_inplace`` costs on real training steps, and how much it holds.

Prints a table: the median CPU time of one training step (forward, backward, optimizer step) of an MLP and
of a small CNN, plain and inside ``watch_inplace``, with Adam ``foreach=True`` and ``foreach=False``
(the per-tensor path writes one op per parameter and state tensor), the slowdown, and what the watcher
holds after 200 steps: its records (capped by ``max_records``) and their Python memory (tracemalloc).
The goal is under 2x the plain step. Each watched step enters the watcher anew (as a ``%%watch_inplace``
cell does), so the cost of entering it is included. Run with ``python benchmarks/bench_inplace_watch.py``.
"""

import gc
import statistics
import time
import tracemalloc

import torch
from torch import nn

from tutorial_lib import format_bytes, watch_inplace
from tutorial_lib.facts.inplace_watch import DEFAULT_MAX_RECORDS

REPEATS = 40
BATCH = 5
HELD_STEPS = 200


def mlp_step(foreach):
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(256, 512), nn.ReLU(), nn.Linear(512, 512), nn.ReLU(), nn.Linear(512, 10))
    optimizer = torch.optim.Adam(model.parameters(), lr=1e-3, foreach=foreach)
    inputs, targets = torch.randn(64, 256), torch.randint(0, 10, (64,))

    def step():
        optimizer.zero_grad()
        nn.functional.cross_entropy(model(inputs), targets).backward()
        optimizer.step()

    return step


def cnn_step(foreach):
    torch.manual_seed(0)
    model = nn.Sequential(
        nn.Conv2d(3, 16, 3, padding=1),
        nn.BatchNorm2d(16),
        nn.ReLU(inplace=True),
        nn.MaxPool2d(2),
        nn.Conv2d(16, 32, 3, padding=1),
        nn.BatchNorm2d(32),
        nn.ReLU(inplace=True),
        nn.MaxPool2d(2),
        nn.Flatten(),
        nn.Linear(32 * 8 * 8, 10),
    )
    optimizer = torch.optim.Adam(model.parameters(), lr=1e-3, foreach=foreach)
    inputs, targets = torch.randn(32, 3, 32, 32), torch.randint(0, 10, (32,))

    def step():
        optimizer.zero_grad()
        nn.functional.cross_entropy(model(inputs), targets).backward()
        optimizer.step()

    return step


def interleaved_seconds(step):
    """Median and fastest CPU time of one step, plain and watched, alternating batch by batch.

    CPU time of this process (``time.process_time``), not wall time: on a shared machine other work
    stretches wall time at random. Alternating batches of ``BATCH`` steps keeps drift out of the ratio.
    """
    step()  # warm up, and let the optimizer create its state
    with watch_inplace():
        step()
    plain, watched = [], []
    for _ in range(REPEATS):
        started = time.process_time()
        for _ in range(BATCH):
            step()
        plain.append((time.process_time() - started) / BATCH)
        started = time.process_time()
        for _ in range(BATCH):
            with watch_inplace():
                step()
        watched.append((time.process_time() - started) / BATCH)
    return statistics.median(plain), min(plain), statistics.median(watched), min(watched)


def held_after(step):
    gc.collect()
    tracemalloc.start()
    before = tracemalloc.get_traced_memory()[0]
    with watch_inplace() as watch:
        for _ in range(HELD_STEPS):
            step()
    gc.collect()
    held = tracemalloc.get_traced_memory()[0] - before
    tracemalloc.stop()
    return watch.held_records(), held


def main():
    torch.set_num_threads(1)  # steadier timings on a shared machine
    rows = []
    for name, make in (("MLP 256-512-512-10, batch 64", mlp_step), ("CNN 2 conv + BN, 32x32, batch 32", cnn_step)):
        for foreach in (True, False):
            step = make(foreach)
            plain, plain_best, watched, watched_best = interleaved_seconds(step)
            records, held = held_after(step)
            rows.append(
                (
                    f"{name}, Adam foreach={foreach}",
                    f"{plain * 1e3:.2f} ms ({plain_best * 1e3:.2f})",
                    f"{watched * 1e3:.2f} ms ({watched_best * 1e3:.2f})",
                    f"{watched / plain:.2f}x ({watched_best / plain_best:.2f}x)",
                    f"{records:,}",
                    format_bytes(held),
                    f"{held / records:.0f} B",
                )
            )
    headers = (
        "training step",
        "plain: median (fastest)",
        "watched: median (fastest)",
        "slowdown",
        f"records after {HELD_STEPS} steps",
        "Python memory held",
        "per record",
    )
    widths = [max(len(r[i]) for r in rows + [headers]) for i in range(len(headers))]
    print("  ".join(h.ljust(w) for h, w in zip(headers, widths)).rstrip())
    print("  ".join("-" * w for w in widths))
    for row in rows:
        print("  ".join(c.ljust(w) for c, w in zip(row, widths)).rstrip())
    print(
        f"\n(torch {torch.__version__}, 1 CPU thread, CPU time per step over {REPEATS} batches of {BATCH} steps, "
        "plain and watched alternating; "
        f"the watcher keeps at most max_records={DEFAULT_MAX_RECORDS:,} write records and as many node "
        "records: plain tuples, no tensors)"
    )


if __name__ == "__main__":
    main()
