"""How much the model layer's instruments cost on a small model's training step.

Prints a table: the median time of one training step (forward, backward, optimizer step) of a small MLP,
plain and under `trace_ops`, `measure_memory`, and followed by `inplace_hazards` on the loss (which walks
the graph before backward). Run with `make bench` or `python benchmarks/bench_model_layer.py`.
"""

import torch
from timing import median_seconds  # benchmarks/timing.py, beside this script
from torch import nn

from tutorial_lib import inplace_hazards, measure_memory, trace_ops

REPEATS = 30


def make_step():
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(256, 512), nn.ReLU(), nn.Linear(512, 512), nn.ReLU(), nn.Linear(512, 10))
    optimizer = torch.optim.SGD(model.parameters(), lr=0.01)
    inputs, targets = torch.randn(64, 256), torch.randint(0, 10, (64,))

    def forward():
        optimizer.zero_grad()
        return nn.functional.cross_entropy(model(inputs), targets)

    def finish(loss):
        loss.backward()
        optimizer.step()

    return forward, finish


def main():
    forward, finish = make_step()

    def plain():
        finish(forward())

    def traced():
        with trace_ops():
            finish(forward())

    def measured():
        with measure_memory():
            finish(forward())

    def hazards_checked():
        loss = forward()
        inplace_hazards(loss)
        finish(loss)

    baseline = median_seconds(plain, REPEATS)
    rows = [("training step, plain", baseline)]
    for label, run in (
        ("under trace_ops()", traced),
        ("under measure_memory()", measured),
        ("plus inplace_hazards(loss)", hazards_checked),
    ):
        rows.append((label, median_seconds(run, REPEATS)))
    print(f"MLP 256-512-512-10, batch 64, CPU, torch {torch.__version__}, median of {REPEATS} steps")
    print(f"{'step':<30} {'median ms':>10} {'x plain':>8}")
    for label, seconds in rows:
        print(f"{label:<30} {seconds * 1000:>10.2f} {seconds / baseline:>8.2f}")


if __name__ == "__main__":
    main()
