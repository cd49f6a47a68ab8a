"""tutorial_lib.workers: the functions chapter 7's child processes run do what the notebook says, in this process
and in two child processes started the way the notebook starts them."""

import ast
import os
import queue
import sys
import threading
from pathlib import Path

import pytest
import torch
import torch.multiprocessing as mp
from torch import nn

import tutorial_lib as tl
from tutorial_lib import workers

# --- what the module imports ------------------------------------------------------------------------------------


def test_workers_imports_torch_and_the_standard_library_only():
    """A child imports this module by name; it must not pull in the pictures, widgets or anything else."""
    tree = ast.parse(Path(workers.__file__).read_text())
    imported = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            imported.update(alias.name.split(".")[0] for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            assert node.level == 0, f"workers.py imports from its own package (line {node.lineno})"
            imported.add(node.module.split(".")[0])
    assert imported - {"__future__", "torch"} <= sys.stdlib_module_names, imported


# --- in this process ----------------------------------------------------------------------------------------------


def test_fill_in_place_writes_into_the_given_tensor():
    tensor = torch.zeros(4)
    workers.fill_in_place(tensor, 7.0)
    assert torch.equal(tensor, torch.full((4,), 7.0))


def test_double_from_queue_replies_and_doubles():
    inbox, outbox = queue.SimpleQueue(), queue.SimpleQueue()
    tensor = torch.arange(4.0)
    inbox.put(tensor)
    workers.double_from_queue(inbox, outbox)
    assert outbox.get() is False  # never sent through a process boundary, so not in shared memory
    assert outbox.get() == "doubled"
    assert torch.equal(tensor, torch.tensor([0.0, 2.0, 4.0, 6.0]))


def _regression_data():
    generator = torch.Generator().manual_seed(0)
    inputs = torch.randn(64, 3, generator=generator)
    targets = inputs @ torch.tensor([[2.0], [-1.0], [0.5]]) + 0.3
    return inputs, targets


def _empty_log(entries):
    """``log_worker``, ``log_update`` and ``log_length`` for ``entries`` updates of an ``nn.Linear(3, 1)``."""
    return (
        torch.full((entries,), -1, dtype=torch.int64),
        torch.zeros(entries, 4),
        torch.zeros(1, dtype=torch.int64),
    )


def _train_in_this_process(model, inputs, targets, steps, rank):
    """``hogwild_train_logged`` as the only worker, with a thread barrier and lock; returns the log."""
    log_worker, log_update, log_length = _empty_log(steps)
    start, lock = threading.Barrier(1), threading.Lock()
    workers.hogwild_train_logged(
        model, inputs, targets, steps, 0.1, rank, start, lock, log_worker, log_update, log_length
    )
    return log_worker, log_update, log_length


def test_hogwild_train_logged_in_one_process_learns_in_place():
    torch.manual_seed(0)
    inputs, targets = _regression_data()
    model = nn.Linear(3, 1)
    weight, address = model.weight, model.weight.data_ptr()
    loss_before = nn.functional.mse_loss(model(inputs), targets).item()
    _train_in_this_process(model, inputs, targets, 30, rank=1)
    assert model.weight is weight and weight.data_ptr() == address  # updated in place, as shared parameters must be
    assert nn.functional.mse_loss(model(inputs), targets).item() < loss_before / 100


def test_hogwild_train_logged_in_one_process_logs_every_update_exactly():
    torch.manual_seed(0)
    inputs, targets = _regression_data()
    model = nn.Linear(3, 1)
    start = workers.flat_parameters(model)
    log_worker, log_update, log_length = _train_in_this_process(model, inputs, targets, 30, rank=1)
    assert int(log_length) == 30
    assert torch.all(log_worker == 1)
    replayed = start.clone()
    for update in log_update:
        replayed += update
    assert torch.equal(replayed, workers.flat_parameters(model))  # the log accounts for every bit of the change


def test_flat_parameters_is_a_copy_in_parameter_order():
    model = nn.Linear(3, 1)
    flat = workers.flat_parameters(model)
    assert torch.equal(flat, torch.cat([model.weight.detach().reshape(-1), model.bias.detach()]))
    assert not tl.shares_memory(flat, model.weight)


def test_ddp_replica_with_world_size_one(tmp_path):
    report = torch.zeros(1, 5, 4)
    workers.ddp_replica(0, 1, str(tmp_path / "rendezvous"), report)
    torch.manual_seed(0)
    assert torch.equal(report[0, 0], workers.flat_parameters(nn.Linear(3, 1)))
    assert torch.equal(report[0, 0], report[0, 1])  # rank 0 broadcasts to itself: unchanged
    assert not torch.equal(report[0, 1], report[0, 2])  # one SGD step
    assert torch.equal(report[0, 2], report[0, 3])  # only rank 1 edits its copy
    assert report[0, 4, 0] == 0.0  # a process's own parameters are not in shared memory


# --- in child processes (what the notebook runs) ------------------------------------------------------------------
# The notebook starts children with "forkserver" (the server preloads tutorial_lib.workers) where the platform has
# it, else with "spawn" (Windows). Every worker test runs under each start method this platform has of the two.

START_METHODS = [method for method in ("forkserver", "spawn") if method in mp.get_all_start_methods()]


@pytest.fixture(params=START_METHODS)
def context(request):
    context = mp.get_context(request.param)
    if request.param == "forkserver":
        context.set_forkserver_preload(["tutorial_lib.workers"])  # as the notebook does
    return context


def _run(context, target, args_list, timeout=120):
    """Start one child per argument tuple, wait for all, and return their exit codes (a hung child is ended)."""
    processes = [context.Process(target=target, args=args) for args in args_list]
    for process in processes:
        process.start()
    for process in processes:
        process.join(timeout)
    for process in processes:
        if process.is_alive():
            process.terminate()
            process.join()
    return [process.exitcode for process in processes]


def _shared_regression_model():
    """The data and a fresh ``nn.Linear(3, 1)`` in shared memory, seeded as the notebook's Hogwild cell is."""
    torch.manual_seed(0)
    inputs, targets = _regression_data()
    model = nn.Linear(3, 1)
    model.share_memory()
    return inputs, targets, model


@pytest.mark.slow
def test_a_child_writes_into_shared_memory(context):
    tensor = torch.zeros(4).share_memory_()
    assert _run(context, workers.fill_in_place, [(tensor, 3.0)]) == [0]
    assert torch.equal(tensor, torch.full((4,), 3.0))


@pytest.mark.slow
def test_hogwild_train_logged_with_two_workers_trains_the_parent_model_and_accounts_for_both(context):
    inputs, targets, model = _shared_regression_model()
    start = workers.flat_parameters(model)
    log_worker, log_update, log_length = (t.share_memory_() for t in _empty_log(80))
    barrier, lock = context.Barrier(2), context.Lock()
    args = [
        (model, inputs[rank::2], targets[rank::2], 40, 0.1, rank, barrier, lock, log_worker, log_update, log_length)
        for rank in range(2)
    ]
    assert _run(context, workers.hogwild_train_logged, args) == [0, 0]
    assert int(log_length) == 80
    assert torch.bincount(log_worker, minlength=2).tolist() == [40, 40]
    replayed = start.clone()
    for update in log_update:
        replayed += update
    assert torch.equal(replayed, workers.flat_parameters(model))
    assert nn.functional.mse_loss(model(inputs), targets).item() < 1e-3


@pytest.mark.slow
def test_ddp_replicas_in_two_processes_hold_copies(context, tmp_path):
    report = torch.zeros(2, 5, 4).share_memory_()
    init_file = os.fspath(tmp_path / "rendezvous")
    assert _run(context, workers.ddp_replica_process, [(rank, 2, init_file, report) for rank in range(2)]) == [0, 0]
    assert not torch.equal(report[0, 0], report[1, 0])  # different seeds
    assert torch.equal(report[0, 1], report[1, 1])  # DDP copied rank 0's parameters into rank 1
    assert torch.equal(report[0, 2], report[1, 2])  # averaged gradients: identical steps
    assert torch.equal(report[0, 3], report[0, 2])  # rank 1's edit did not reach rank 0
    assert torch.allclose(report[1, 3, :3], report[1, 2, :3] + 100)
    assert torch.all(report[:, 4, 0] == 0)
