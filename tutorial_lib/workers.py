"""Functions that chapter 7 runs in child processes (``torch.multiprocessing``).

The notebook starts its children with the "forkserver" start method where the platform has one (a server
process imports torch and this module once; each child is a fork of it), and with "spawn" (a fresh Python
interpreter per child) where it has not. Either way a child cannot see functions defined in a notebook cell:
it imports its target from a module by name. These live here for that reason. Each one only touches the
tensors and module it is given, and reports back by writing into tensors the parent shared with it (or
through a queue), so the parent can check what happened without relying on printing from the children.

Nothing here is imported by ``tutorial_lib/__init__.py``; notebooks use ``from tutorial_lib import workers``.
"""

from __future__ import annotations

import torch
import torch.distributed as dist
from torch import nn
from torch.nn.parallel import DistributedDataParallel


def fill_in_place(tensor: torch.Tensor, value: float) -> None:
    """Write ``value`` into every element of ``tensor`` in place (the parent sees it if the memory is shared).

    Args:
        tensor: a CPU tensor, normally moved to shared memory by ``share_memory_()`` before the child starts.
        value: the number to write.
    """
    tensor.fill_(value)


def double_from_queue(inbox, outbox) -> None:
    """Receive one tensor from ``inbox``, say whether it arrived in shared memory, then double it in place.

    Puts on ``outbox``, in this order: ``tensor.is_shared()`` as seen in the child (a bool), then the
    string ``"doubled"`` once the in-place multiplication is done. The tensor itself is never sent back: the
    parent sees the change because both processes map the same memory.

    Args:
        inbox: a ``torch.multiprocessing`` queue the parent puts one tensor on.
        outbox: a queue for the two replies.
    """
    tensor = inbox.get()
    outbox.put(tensor.is_shared())
    tensor.mul_(2)
    outbox.put("doubled")


def hogwild_train_logged(
    model: nn.Module,
    inputs: torch.Tensor,
    targets: torch.Tensor,
    steps: int,
    lr: float,
    rank: int,
    start,
    lock,
    log_worker: torch.Tensor,
    log_update: torch.Tensor,
    log_length: torch.Tensor,
) -> None:
    """Hogwild-style SGD on a shared model that logs every update it writes, so the parent can account for them.

    Several processes run this at once on the same ``model`` (after ``model.share_memory()``). Each one reads
    the shared parameters and computes its gradients without any lock, so the expensive part runs at the same
    time in every process. Only the write is taken in turn: under ``lock``, a worker adds its update
    (``-lr * gradient``) into the shared parameters and appends it to the log. Real Hogwild takes no lock at all
    and accepts that two writes landing at the same instant may overwrite each other; the lock here costs a
    few microseconds per step and makes the log exact: replaying its entries in order, starting from the
    parameters before training, gives the shared parameters afterwards, bit for bit.

    Args:
        model: the shared model (any module mapping ``inputs`` to predictions shaped like ``targets``).
        inputs, targets: this worker's part of the data.
        steps: how many SGD steps to take.
        lr: the learning rate.
        rank: this worker's number, written into the log with each of its updates.
        start: a ``Barrier`` for all workers, so that they start training together (starting a process
            takes far longer than this training does).
        lock: a ``Lock`` shared by all workers, held while writing one update and its log entry.
        log_worker: a shared int64 tensor with one entry per update of all workers: which worker wrote it.
        log_update: a shared float tensor of shape ``(updates of all workers, number of parameter elements)``:
            the update itself, all parameters flattened in ``parameters()`` order.
        log_length: a shared int64 tensor of one element, 0 at the start: how many entries the log holds.
    """
    torch.set_num_threads(1)  # several processes share the CPU cores: one thread each avoids oversubscription
    parameters = list(model.parameters())
    start.wait()
    for _ in range(steps):
        loss = nn.functional.mse_loss(model(inputs), targets)  # reads the shared parameters, no lock
        gradients = torch.autograd.grad(loss, parameters)
        updates = [-lr * gradient for gradient in gradients]
        with lock, torch.no_grad():
            for parameter, update in zip(parameters, updates):
                parameter.add_(update)  # straight into the shared memory the other workers read
            entry = int(log_length)
            log_worker[entry] = rank
            log_update[entry] = torch.cat([update.reshape(-1) for update in updates])
            log_length += 1


def flat_parameters(model: nn.Module) -> torch.Tensor:
    """All parameters of ``model`` as one new 1-D tensor (a copy), in ``parameters()`` order."""
    with torch.no_grad():
        return torch.cat([p.detach().reshape(-1) for p in model.parameters()])


def ddp_replica(rank: int, world_size: int, init_file: str, report: torch.Tensor) -> None:
    """One process of a ``DistributedDataParallel`` run on the CPU (gloo backend): what each replica holds.

    Every rank builds ``nn.Linear(3, 1)`` with a different seed, wraps it in DDP, takes one SGD step on data
    of its own, then rank 1 adds 100 to its weights. After each stage every rank writes its parameters into
    ``report[rank, stage]``; ``report[rank, 4, 0]`` is 1.0 when the rank's parameters were in shared memory.

    Stages: 0 before DDP, 1 right after wrapping, 2 after the step, 3 after rank 1's edit.

    Args:
        rank: this process's rank (``torch.multiprocessing.spawn`` passes it first).
        world_size: the number of processes.
        init_file: a path that does not exist yet; the processes meet there (``file://`` rendezvous), which
            needs no network port.
        report: a shared float tensor of shape ``(world_size, 5, 4)``.
    """
    torch.set_num_threads(1)
    dist.init_process_group("gloo", init_method=f"file://{init_file}", rank=rank, world_size=world_size)
    try:
        torch.manual_seed(rank)  # different starting weights on every rank, on purpose
        model = nn.Linear(3, 1)
        report[rank, 0] = flat_parameters(model)
        ddp_model = DistributedDataParallel(model)  # broadcasts rank 0's parameters into every replica
        report[rank, 1] = flat_parameters(model)
        optimizer = torch.optim.SGD(ddp_model.parameters(), lr=0.1)
        generator = torch.Generator().manual_seed(100 + rank)  # each rank trains on different data
        inputs = torch.randn(8, 3, generator=generator)
        targets = torch.randn(8, 1, generator=generator)
        nn.functional.mse_loss(ddp_model(inputs), targets).backward()  # gradients are averaged across ranks
        optimizer.step()
        report[rank, 2] = flat_parameters(model)
        dist.barrier()
        if rank == 1:
            with torch.no_grad():
                model.weight.add_(100.0)  # only this process's copy
        dist.barrier()
        report[rank, 3] = flat_parameters(model)
        report[rank, 4, 0] = float(all(p.is_shared() for p in model.parameters()))
        del optimizer, ddp_model  # let the reducer go while the group is alive
        dist.barrier()  # nobody tears the group down while a peer may still be talking to it
    finally:
        dist.destroy_process_group()


def ddp_replica_process(rank: int, world_size: int, init_file: str, report: torch.Tensor) -> None:
    """``ddp_replica`` as the target of a child process: runs it, then ends the process at once.

    Everything the parent needs is in ``report`` (shared memory) when ``ddp_replica`` returns. Ending with
    ``os._exit`` skips the interpreter's teardown, where gloo's background threads can still hold tensors
    and abort the process (exit code -6, SIGABRT) under load; see pytorch/pytorch pull request 179291.
    An exception still ends the process with a traceback and a non-zero exit code.
    """
    import os
    import sys

    ddp_replica(rank, world_size, init_file, report)
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(0)


__all__ = [
    "fill_in_place",
    "double_from_queue",
    "hogwild_train_logged",
    "flat_parameters",
    "ddp_replica",
    "ddp_replica_process",
]
