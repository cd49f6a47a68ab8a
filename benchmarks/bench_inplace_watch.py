"""What ``watch_inplace`` costs per training step and per script, and how much it holds.

Prints two tables.

* Per training step: the median CPU time of one step (forward, backward, optimizer step) of an MLP and of a
  small CNN with ``nn.ReLU(inplace=True)`` (every such write is traced to its module), plain and inside
  ``watch_inplace``, with Adam ``foreach=True`` and ``foreach=False`` (the per-tensor path writes one op per
  parameter and state tensor), the slowdown, and what the watcher holds after 200 steps: its records (capped
  by ``max_records``) and their Python memory (tracemalloc). Each watched step enters the watcher anew (as a
  ``%%watch_inplace`` cell does), so the cost of entering it is included. With ``--device cuda`` the steps run
  on the GPU (wall time, synchronised: a GPU step takes about a millisecond, so there the watcher's per-op
  Python cost is what decides whether people leave it on).
* Per script (``--scripts``, CPU): the CPU time of ``python script.py`` and of
  ``python -m tutorial_lib.explain script.py`` for three small training scripts, alternating, median of
  ``SCRIPT_REPEATS``: what a user pays to run a script under the explainer, torch's import included.

Run with ``python benchmarks/bench_inplace_watch.py [--device cuda] [--scripts]``.
"""

import argparse
import gc
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
import tracemalloc
from pathlib import Path

import torch
from torch import nn

from tutorial_lib import format_bytes, watch_inplace
from tutorial_lib.facts.inplace_watch import DEFAULT_MAX_RECORDS

REPEATS = 40
BATCH = 5
HELD_STEPS = 200
SCRIPT_REPEATS = 5
DEVICE = torch.device("cpu")


def mlp_step(foreach):
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(256, 512), nn.ReLU(), nn.Linear(512, 512), nn.ReLU(), nn.Linear(512, 10))
    model.to(DEVICE)
    optimizer = torch.optim.Adam(model.parameters(), lr=1e-3, foreach=foreach)
    inputs, targets = torch.randn(64, 256, device=DEVICE), torch.randint(0, 10, (64,), device=DEVICE)

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
    ).to(DEVICE)
    optimizer = torch.optim.Adam(model.parameters(), lr=1e-3, foreach=foreach)
    inputs, targets = torch.randn(32, 3, 32, 32, device=DEVICE), torch.randint(0, 10, (32,), device=DEVICE)

    def step():
        optimizer.zero_grad()
        nn.functional.cross_entropy(model(inputs), targets).backward()
        optimizer.step()

    return step


def _clock() -> float:
    """CPU time of this process on the CPU (other work on a shared machine stretches wall time at random); wall
    time after a synchronise on a GPU (the GPU's work is not this process's CPU time)."""
    if DEVICE.type == "cuda":
        torch.cuda.synchronize()
        return time.perf_counter()
    return time.process_time()


def interleaved_seconds(step):
    """Median and fastest time of one step, plain and watched, alternating batch by batch (see ``_clock``).

    Alternating batches of ``BATCH`` steps keeps drift out of the ratio.
    """
    step()  # warm up, and let the optimizer create its state
    with watch_inplace():
        step()
    plain, watched = [], []
    for _ in range(REPEATS):
        started = _clock()
        for _ in range(BATCH):
            step()
        plain.append((_clock() - started) / BATCH)
        started = _clock()
        for _ in range(BATCH):
            with watch_inplace():
                step()
        watched.append((_clock() - started) / BATCH)
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


def print_table(headers, rows) -> None:
    widths = [max(len(r[i]) for r in rows + [headers]) for i in range(len(headers))]
    print("  ".join(h.ljust(w) for h, w in zip(headers, widths)).rstrip())
    print("  ".join("-" * w for w in widths))
    for row in rows:
        print("  ".join(c.ljust(w) for c, w in zip(row, widths)).rstrip())


def step_table() -> None:
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
    print_table(headers, rows)
    where = (
        f"{torch.cuda.get_device_name()}, wall time after synchronising"
        if DEVICE.type == "cuda"
        else "1 CPU thread, CPU time"
    )
    print(
        f"\n(torch {torch.__version__}, {where}, per step over {REPEATS} batches of {BATCH} steps, "
        "plain and watched alternating; "
        f"the watcher keeps at most max_records={DEFAULT_MAX_RECORDS:,} write records and as many node "
        "records: plain tuples, no tensors)"
    )


SCRIPTS = {
    "MLP, 30 Adam steps": """
import torch
from torch import nn
torch.manual_seed(0)
model = nn.Sequential(nn.Linear(64, 128), nn.ReLU(), nn.Linear(128, 10))
optimizer = torch.optim.Adam(model.parameters(), lr=1e-3)
for _ in range(30):
    optimizer.zero_grad()
    nn.functional.cross_entropy(model(torch.randn(32, 64)), torch.randint(0, 10, (32,))).backward()
    optimizer.step()
print(float(model[0].weight.sum()))
""",
    "CNN with ReLU(inplace=True), 10 SGD steps": """
import torch
from torch import nn
torch.manual_seed(0)
model = nn.Sequential(nn.Conv2d(1, 8, 3, padding=1), nn.BatchNorm2d(8), nn.ReLU(inplace=True), nn.MaxPool2d(2),
                      nn.Flatten(), nn.Linear(8 * 14 * 14, 10))
optimizer = torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)
for _ in range(10):
    optimizer.zero_grad()
    nn.functional.cross_entropy(model(torch.randn(16, 1, 28, 28)), torch.randint(0, 10, (16,))).backward()
    optimizer.step()
print(float(model[0].weight.sum()))
""",
    "GAN, 10 steps (D then G)": """
import torch
from torch import nn
torch.manual_seed(0)
generator = nn.Sequential(nn.Linear(8, 32), nn.ReLU(), nn.Linear(32, 16))
discriminator = nn.Sequential(nn.Linear(16, 32), nn.LeakyReLU(0.2), nn.Linear(32, 1))
opt_g = torch.optim.Adam(generator.parameters(), lr=1e-3)
opt_d = torch.optim.Adam(discriminator.parameters(), lr=1e-3)
for _ in range(10):
    fake = generator(torch.randn(32, 8))
    loss_d = nn.functional.softplus(discriminator(fake.detach())).mean()
    opt_d.zero_grad(); loss_d.backward(); opt_d.step()
    loss_g = nn.functional.softplus(-discriminator(fake)).mean()
    opt_g.zero_grad(); loss_g.backward(); opt_g.step()
print(float(generator[0].weight.sum()))
""",
}


def script_table() -> None:
    """Wall time of each script run by python and by the explain command, alternating, median of SCRIPT_REPEATS."""
    root = str(Path(__file__).resolve().parents[1])
    environment = {**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, [root, os.environ.get("PYTHONPATH")]))}
    environment["OMP_NUM_THREADS"] = "1"
    rows = []
    with tempfile.TemporaryDirectory() as folder:
        for name, source in SCRIPTS.items():
            path = Path(folder) / "script.py"
            path.write_text(source)
            commands = {
                "python": [sys.executable, str(path)],
                "explain": [sys.executable, "-m", "tutorial_lib.explain", str(path)],
            }
            times: dict[str, list[float]] = {"python": [], "explain": []}
            outputs = {}
            for _ in range(SCRIPT_REPEATS):
                for label, command in commands.items():
                    started = _children_cpu()
                    done = subprocess.run(command, capture_output=True, text=True, env=environment, check=True)
                    times[label].append(_children_cpu() - started)
                    outputs[label] = done.stdout
            assert outputs["python"] == outputs["explain"], name  # same output, bit for bit
            plain, watched = statistics.median(times["python"]), statistics.median(times["explain"])
            rows.append((name, f"{plain:.2f} s", f"{watched:.2f} s", f"{watched - plain:+.2f} s"))
    print_table(("script", "python script.py", "python -m tutorial_lib.explain", "difference"), rows)
    print(
        f"\n(CPU time of the whole process, user + system, torch's import included, 1 thread, median of "
        f"{SCRIPT_REPEATS}, alternating; the same output both ways, checked)"
    )


def _children_cpu() -> float:
    """User + system CPU seconds of this process's finished children (wall time on a shared machine is noise)."""
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def main():
    global DEVICE
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--device", default="cpu", help="cpu (default) or cuda")
    parser.add_argument("--scripts", action="store_true", help="also time whole scripts under the explain command")
    parser.add_argument("--no-steps", action="store_true", help="skip the per-step table")
    arguments = parser.parse_args()
    DEVICE = torch.device(arguments.device)
    torch.set_num_threads(1)  # steadier timings on a shared machine
    if not arguments.no_steps:
        step_table()
    if arguments.scripts:
        print()
        script_table()


if __name__ == "__main__":
    main()
