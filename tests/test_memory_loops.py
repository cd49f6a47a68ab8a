"""measure_memory on the CPU in the loops users measure (issue 20, section 1).

A training step after the first (``optimizer.zero_grad()`` frees the old gradients without an op), an eval loop
(``out = model(x)`` lets the previous output go), a name bound again, a thread pool made before the block, shared
memory and file mappings, a compiled function. Each case was reported wrong, or measured uncompiled code, before
``measure_memory`` watched the storages alive when a block starts.

Ground truth: ``allocator_truth.allocator_figures_of_block``, the CPU allocator's own events read through the
public ``torch.profiler`` alone, with the profiler started before the workload's setup, so it saw every block the
setup made and reports their frees; where the allocator cannot see the work (another thread's), the storages
still alive and their ``nbytes()``. Python's garbage collector is paused around both runs: a collection that
frees garbage from before the setup would be counted by ``measure_memory`` (it is memory freed in the block),
and not by the profiler, which never saw it allocated.
"""

import concurrent.futures
import contextlib
import copy
import gc
import io
import os
import subprocess
import sys

import numpy
import pytest
import torch
from allocator_truth import allocator_figures_of_block
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from torch import nn

from tutorial_lib import measure_memory


def nbytes(t):
    return t.untyped_storage().nbytes()


@contextlib.contextmanager
def collector_paused():
    gc.disable()  # garbage from before stays garbage: no collection frees it inside a block
    try:
        yield
    finally:
        gc.enable()


def compare_with_the_allocator(setup, block):
    """Runs ``block(setup())`` under the allocator's own events, then again under measure_memory."""
    with collector_paused():
        truth, _, _ = allocator_figures_of_block(setup, block)
        state = setup()
        with measure_memory() as mem:
            result = block(state)  # kept past the block, as the truth keeps it
        del state, result
    return truth, mem


# ---------------------------------------------------------------------------------- 1. training steps
OPTIMIZERS = {
    "SGD": lambda parameters, foreach: torch.optim.SGD(parameters, lr=0.01, foreach=foreach),
    "SGD with momentum": lambda parameters, foreach: torch.optim.SGD(
        parameters, lr=0.01, momentum=0.9, foreach=foreach
    ),
    "Adam": lambda parameters, foreach: torch.optim.Adam(parameters, foreach=foreach),
    "AdamW": lambda parameters, foreach: torch.optim.AdamW(parameters, foreach=foreach),
}
ZERO_GRAD = {
    "zero_grad() (set_to_none=True)": lambda optimizer: optimizer.zero_grad(),
    "zero_grad(set_to_none=False)": lambda optimizer: optimizer.zero_grad(set_to_none=False),
    "no zero_grad (gradients add up)": lambda optimizer: None,
}


def training_step(model, optimizer, inputs, targets, zero_grad, zero_grad_first):
    if zero_grad_first:
        ZERO_GRAD[zero_grad](optimizer)
    nn.functional.cross_entropy(model(inputs), targets).backward()
    optimizer.step()
    if not zero_grad_first:
        ZERO_GRAD[zero_grad](optimizer)


@settings(max_examples=12, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    optimizer=st.sampled_from(sorted(OPTIMIZERS)),
    foreach=st.booleans(),
    zero_grad=st.sampled_from(sorted(ZERO_GRAD)),
    zero_grad_first=st.booleans(),
    hidden=st.integers(1, 48),
    batch=st.integers(1, 16),
    steps_before=st.integers(1, 2),
    steps_measured=st.integers(1, 3),
)
def test_training_steps_match_the_allocator(
    optimizer, foreach, zero_grad, zero_grad_first, hidden, batch, steps_before, steps_measured
):
    def setup():
        torch.manual_seed(0)
        model = nn.Sequential(nn.Linear(16, hidden), nn.ReLU(), nn.Linear(hidden, 4))
        made = OPTIMIZERS[optimizer](model.parameters(), foreach)
        data = (torch.randn(batch, 16), torch.randint(0, 4, (batch,)))
        for _ in range(steps_before):  # the steps before: gradients (and state) exist when the block starts
            training_step(model, made, *data, zero_grad, zero_grad_first)
        return model, made, data

    def block(state):
        model, made, data = state
        for _ in range(steps_measured):
            training_step(model, made, *data, zero_grad, zero_grad_first)

    truth, mem = compare_with_the_allocator(setup, block)
    assert (mem.allocated, mem.peak) == (truth.allocated, truth.peak)
    assert mem.unseen == ()


def test_the_step_after_the_first_leaves_nothing_with_the_default_zero_grad():
    """The issue's case: a step with the default zero_grad() leaves nothing new. The gradients it freed were
    counted as left allocated (546,856 B for a 256-512-10 MLP), and the peak was too high by as much."""

    def setup():
        torch.manual_seed(0)
        model = nn.Sequential(nn.Linear(256, 512), nn.ReLU(), nn.Linear(512, 10))
        optimizer = torch.optim.Adam(model.parameters())
        data = (torch.randn(64, 256), torch.randint(0, 10, (64,)))
        step(model, optimizer, data)
        return model, optimizer, data

    def step(model, optimizer, data):
        optimizer.zero_grad()
        nn.functional.cross_entropy(model(data[0]), data[1]).backward()
        optimizer.step()

    truth, mem = compare_with_the_allocator(setup, lambda state: step(*state))
    assert (mem.allocated, mem.peak) == (truth.allocated, truth.peak)
    assert mem.allocated == 0 and mem.unseen == ()
    freed = [a for a in mem.allocations if a.kind == "from before the block"]
    assert sum(a.nbytes for a in freed) == 546_856 == 4 * (256 * 512 + 512 + 512 * 10 + 10)  # the gradients
    assert {a.freed_by for a in freed} == {"aten::t"}  # zero_grad runs no op: the first op of forward comes next


# ---------------------------------------------------------------------------------------- 2. eval loops
MODES = {
    "no_grad": torch.no_grad,
    "inference_mode": torch.inference_mode,
    "grad enabled (each output keeps its graph)": contextlib.nullcontext,
}


@settings(max_examples=12, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    mode=st.sampled_from(sorted(MODES)),
    hidden=st.integers(1, 64),
    batch=st.integers(1, 16),
    iterations=st.integers(1, 3),
    keep_outputs=st.booleans(),
)
def test_eval_loops_that_rebind_the_output_match_the_allocator(mode, hidden, batch, iterations, keep_outputs):
    def setup():
        torch.manual_seed(0)
        model = nn.Sequential(nn.Linear(8, hidden), nn.Tanh(), nn.Linear(hidden, 3))
        batches = [torch.randn(batch, 8) for _ in range(iterations + 1)]
        with MODES[mode]():
            out = model(batches[0])  # the output of the iteration before the block
        return {"model": model, "batches": batches, "out": out, "kept": []}

    def block(state):
        out = state.pop("out")
        with MODES[mode]():
            for inputs in state["batches"][1:]:
                out = state["model"](inputs)  # lets the previous output (and its graph) go
                if keep_outputs:
                    state["kept"].append(out.argmax(1))
        state["out"] = out

    truth, mem = compare_with_the_allocator(setup, block)
    assert (mem.allocated, mem.peak) == (truth.allocated, truth.peak)
    assert mem.unseen == ()


# ------------------------------------------------------------------------------------- 3. names rebound
NAMES = ("a", "b", "c")
STATEMENTS = {
    "new": lambda env, target, source, size: torch.randn(size),
    "mul": lambda env, target, source, size: env[source] * 3,
    "relu": lambda env, target, source, size: env[source].relu(),
    "slice": lambda env, target, source, size: env[source][::2],
    "cat": lambda env, target, source, size: torch.cat([env[source], env[source]]),
    "mask": lambda env, target, source, size: env[source][env[source] > 0],
    "deepcopy": lambda env, target, source, size: copy.deepcopy(env[source]),
}


def run_statements(env, statements):
    for statement, target, source, size in statements:
        if statement == "del":
            env.pop(target, None)
        elif statement == "add_":
            if target in env:
                env[target].add_(1)
        elif statement == "new" or source in env:
            env[target] = STATEMENTS[statement](env, target, source, size)  # the old env[target] goes here


statement_lists = st.lists(
    st.tuples(
        st.sampled_from(sorted(STATEMENTS) + ["del", "add_"]),
        st.sampled_from(NAMES),
        st.sampled_from(NAMES),
        st.integers(1, 5000),
    ),
    min_size=1,
    max_size=6,
)


@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(before=statement_lists, inside=statement_lists)
def test_names_bound_again_match_the_allocator(before, inside):
    """``y = x * 3`` over an older ``y``, ``del``, in-place writes: random programs over three names, the first
    part run before the block, the second inside it."""

    def setup():
        torch.manual_seed(0)
        env = {}
        run_statements(env, before)
        return env

    truth, mem = compare_with_the_allocator(setup, lambda env: run_statements(env, inside))
    assert (mem.allocated, mem.peak) == (truth.allocated, truth.peak)
    assert mem.unseen == ()


# -------------------------------------------------------------------------------------- 4. thread pools
@settings(max_examples=16, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    pool_made_before=st.booleans(),
    size=st.integers(1, 50_000),
    used_by_an_op=st.booleans(),
    kept=st.booleans(),
    older_freed_in_the_pool=st.booleans(),
)
def test_a_thread_pools_memory_is_counted_consistently(
    pool_made_before, size, used_by_an_op, kept, older_freed_in_the_pool
):
    """What a worker allocates is not in this thread's allocator events; its frees here are not either. Truth:
    the bytes of the storages the block left alive, less the older one the worker let go."""
    x = torch.randn(size)
    older = [torch.randn(size)]
    older_bytes = nbytes(older[0])
    pool = concurrent.futures.ThreadPoolExecutor(1) if pool_made_before else None
    if pool is not None:
        pool.submit(lambda: None).result()  # its thread exists before the block
    with collector_paused(), measure_memory() as mem:
        if pool is None:
            pool = concurrent.futures.ThreadPoolExecutor(1)
        y = pool.submit(lambda: x * 2).result()  # made in the worker
        z = y + 1 if used_by_an_op else None
        if older_freed_in_the_pool:
            pool.submit(older.clear).result()  # the worker drops the last reference to a tensor from before
        if not kept:
            del y
    pool.shutdown()
    left = (nbytes(y) if kept else 0) + (nbytes(z) if used_by_an_op else 0)
    assert mem.allocated == left - (older_bytes if older_freed_in_the_pool else 0)
    assert mem.peak >= max(mem.allocated, 0)
    if used_by_an_op:
        assert mem.peak >= 2 * nbytes(x)  # y and z were alive together
    saw_the_workers_memory = used_by_an_op or kept
    assert any("did not see allocated" in line for line in mem.unseen) == saw_the_workers_memory
    assert any("started in the block" in line for line in mem.unseen) == (not pool_made_before)


def test_the_reviewed_thread_pool_block_leaves_what_it_left():
    """The review's case (F2): it left z, 4,000,000 B, and was reported as leaving 0."""
    x = torch.randn(1_000_000)
    pool = concurrent.futures.ThreadPoolExecutor(1)
    pool.submit(lambda: None).result()
    with collector_paused(), measure_memory() as mem:
        y = pool.submit(lambda: x * 2).result()
        z = y + 1
        del y
    pool.shutdown()
    assert mem.allocated == nbytes(z) == 4_000_000
    assert mem.peak == 8_000_000 + 12  # y and z, with the 1 wrapped for add (8 B) and its scratch (4 B)
    assert "4,000,000 B" in mem.unseen[0]


# ---------------------------------------------------------------------------- 5. mappings, pinned memory
def test_share_memory_of_an_older_tensor_peaks_as_the_allocator_says():
    """The review's W7: the old block was placed after everything the block allocated (peak 8,000 B)."""

    def block(older):
        older.share_memory_()  # a mapping of 4,000 B is made, then the old block goes
        return copy.deepcopy(older)

    truth, mem = compare_with_the_allocator(lambda: torch.randn(1000), block)
    assert (mem.allocated, mem.peak) == (truth.allocated, truth.peak) == (4000, 4004)
    assert [a.source for a in mem.allocations if a.freed_at is None] == ["mapping", "CPU allocator"]


def test_a_mapping_from_before_the_block_is_freed_in_it():
    truth, mem = compare_with_the_allocator(lambda: [torch.randn(1000).share_memory_()], lambda held: held.clear())
    assert (mem.allocated, mem.peak) == (truth.allocated, truth.peak) == (-4000, 0)
    assert [a.source for a in mem.allocations] == ["mapping"]


def test_a_file_mapped_by_torch_load_counts_its_full_size(tmp_path):
    path = tmp_path / "tensors.pt"
    torch.save({"weight": torch.randn(100_000), "bias": torch.randn(10)}, path)

    def block(held):
        held.append(torch.load(path, mmap=True))

    truth, mem = compare_with_the_allocator(list, block)
    file_size = path.stat().st_size
    assert (mem.allocated, mem.peak) == (truth.allocated, truth.peak)
    assert [a.nbytes for a in mem.allocations if a.source == "mapping"] == [file_size]
    assert mem.allocated >= file_size > 400_040


def test_a_dataloader_batch_bound_again_frees_the_older_batch():
    from torch.utils.data import DataLoader, TensorDataset

    def setup():
        data = TensorDataset(torch.randn(64, 32), torch.randint(0, 10, (64,)))
        batches = iter(DataLoader(data, batch_size=16, num_workers=1))
        return {"batches": batches, "batch": next(batches)}  # in shared memory, from the worker

    def block(state):
        batch = state.pop("batch")
        batch = next(state["batches"])  # the older batch's mappings go
        state["batch"] = batch

    truth, mem = compare_with_the_allocator(setup, block)
    assert (mem.allocated, mem.peak) == (truth.allocated, truth.peak)
    assert mem.allocated == 0 and {a.source for a in mem.allocations} >= {"mapping"}


PINNED_PROGRAM = """
import torch
from tutorial_lib import measure_memory
x = torch.randn(1000, 1000, requires_grad=True)
with measure_memory() as mem, torch.autograd.graph.save_on_cpu(pin_memory=True):
    loss = (x * 2).sin().sum()
print(mem.allocated, mem.peak, sorted({a.source for a in mem.allocations}))
"""


@pytest.mark.skipif(not torch.cuda.is_available(), reason="pinned memory needs CUDA's host allocator")
def test_pinned_memory_counts_as_the_same_memory_unpinned():
    """With CUDA present, save_on_cpu(pin_memory=True) takes pinned memory from CUDA's host allocator, which
    reports nothing to the profiler; without CUDA the same code takes the CPU allocator's. The same program, run
    with CUDA and with CUDA hidden, reports the same figures. (On an H100, torch 2.11: 4,000,012 B left, peak
    12,000,008 B. Comparing with save_on_cpu(pin_memory=False) instead was wrong: that one copies nothing, so its
    peak is 4 MB lower.)"""
    runs = {}
    for label, hide in (("cuda", None), ("no cuda", "")):
        env = dict(os.environ, KINETO_LOG_LEVEL="6")
        if hide is not None:
            env["CUDA_VISIBLE_DEVICES"] = hide
        done = subprocess.run([sys.executable, "-c", PINNED_PROGRAM], capture_output=True, text=True, env=env)
        assert done.returncode == 0, done.stderr
        runs[label] = done.stdout.split(" ", 2)
    assert runs["cuda"][:2] == runs["no cuda"][:2]
    assert "pinned" in runs["cuda"][2] and "pinned" not in runs["no cuda"][2]
    x = torch.randn(1000, 1000)
    with measure_memory() as mem:
        held = x.pin_memory()
    assert mem.allocated == nbytes(held) and mem.allocations[-1].source == "pinned"


def test_a_storage_that_cannot_be_resized_counts_its_bytes_only_when_pinned():
    """pin_memory() gives a storage that cannot be resized (aten _pin_memory); the CPU path took every such storage
    for memory no allocator of torch's made (torch.from_numpy's) and counted 0 B: on an H100, `x.pin_memory()` in a
    block reported allocated=0 B, peak=0 B. Here, without CUDA, the rule itself: a non-resizable storage counts
    its bytes when its source is "pinned", and only then."""
    from tutorial_lib.facts.memory import _bytes_of, _source_of

    storage = torch.from_numpy(numpy.zeros(1000, dtype=numpy.float32)).untyped_storage()
    assert not storage.resizable()
    assert _bytes_of(storage, "pinned") == 4000 and _bytes_of(storage, "CPU allocator") == 0
    expected = "pinned" if storage.is_pinned() else "CPU allocator"
    assert _source_of(storage) == expected == "CPU allocator"


@pytest.mark.skipif(not torch.cuda.is_available(), reason="pinned memory needs CUDA's host allocator")
def test_a_pinned_tensor_from_before_the_block_counts_its_free():
    """A pinned batch from the previous iteration (DataLoader(pin_memory=True)) bound again inside the block."""
    held = torch.randn(1000, 1000).pin_memory()
    with measure_memory() as mem:
        del held
    assert mem.allocated == -4_000_000


# ------------------------------------------------------------------------------------ 6. torch.compile
def test_a_compiled_function_is_measured_compiled_and_stays_compiled():
    """Under a dispatch mode Dynamo ran the function uncompiled, and marked it to stay so (review W3)."""

    @torch.compile(backend="aot_eager")
    def compiled(a, b):
        return (a * b).sin() * a

    a, b = torch.randn(64, 64, requires_grad=True), torch.randn(64, 64, requires_grad=True)
    assert compiled(a, b).grad_fn.name().endswith("CompiledFunctionBackward")  # compiled outside the block
    truth, _, _ = allocator_figures_of_block(lambda: None, lambda _: compiled(a, b))
    with collector_paused(), measure_memory() as mem:
        inside = compiled(a, b)
    assert inside.grad_fn.name().endswith("CompiledFunctionBackward")
    assert compiled(a, b).grad_fn.name().endswith("CompiledFunctionBackward")  # and it stays compiled
    assert (mem.allocated, mem.peak) == (truth.allocated, truth.peak)
    assert mem.unseen == ()


# ------------------------------------------------------------------ 7. storages no allocator is known to own
def test_a_numpy_backed_tensor_from_before_the_block_is_freed_as_unseen_bytes():
    """torch.from_numpy's storage is NumPy's memory, not resizable, like torch.load's and a tensor's after x.numpy()
    (the CPU allocator's): Python cannot tell them apart, so the free is not counted, and unseen gives the bytes."""
    held = [torch.from_numpy(numpy.ones(1000, dtype=numpy.float32))]
    with collector_paused(), measure_memory() as mem:
        held.clear()
    assert (mem.allocated, mem.peak) == (0, 0)
    assert len(mem.unseen) == 1 and mem.unseen[0].startswith("4,000 B (3.91 KiB) of tensors from before the block")


def test_a_tensor_read_through_numpy_before_the_block_is_counted_or_said_unseen():
    """After x.numpy() the storage cannot be resized: its free counts when the allocator's records report it (they
    know the block if a profiler ever saw that address allocated), else unseen gives the bytes. Never a wrong
    figure in silence."""
    held = [torch.randn(1000)]
    held[0].numpy()
    with collector_paused(), measure_memory() as mem:
        held.clear()
    assert mem.peak == 0
    assert (mem.allocated, mem.unseen) == (-4000, ()) or (
        mem.allocated == 0 and len(mem.unseen) == 1 and mem.unseen[0].startswith("4,000 B (3.91 KiB)")
    )


def test_a_loaded_tensor_is_counted_when_the_profiler_saw_it_made():
    """torch.load's storage made in an earlier block is known to the allocator's records: its free is counted."""
    buffer = io.BytesIO()
    torch.save(torch.randn(1000), buffer)
    with measure_memory() as made:
        held = [torch.load(io.BytesIO(buffer.getvalue()))]
    gc.collect()  # garbage earlier tests left in cycles would be freed by the collection inside the block too
    with collector_paused(), measure_memory() as mem:
        held.clear()
        gc.collect()  # torch.load leaves its tensor in a reference cycle
    assert made.allocated >= 4000 and mem.allocated == -4000 and mem.unseen == ()


@pytest.mark.parametrize("layout", ["coo", "csr", "csc", "bsr"])
@pytest.mark.parametrize("inside", ["del", "rebind", "densify"])
def test_a_sparse_tensor_from_before_the_block_counts_its_free(layout, inside):
    """A sparse tensor's memory is its indices' and values' storages: their frees count like a dense tensor's."""
    make = {
        "coo": lambda d: d.to_sparse(),
        "csr": lambda d: d.to_sparse_csr(),
        "csc": lambda d: d.to_sparse_csc(),
        "bsr": lambda d: d.to_sparse_bsr((2, 2)),
    }[layout]

    def setup():
        torch.manual_seed(0)
        dense = torch.randn(64, 32) * (torch.rand(64, 32) > 0.5)
        return {"s": make(dense)}

    def block(env):
        if inside == "del":
            del env["s"]
        elif inside == "rebind":
            env["s"] = make(torch.ones(4, 4))
        else:
            env["s"] = env["s"].to_dense()

    truth, mem = compare_with_the_allocator(setup, block)
    assert truth.allocated < 0  # the sparse tensor's memory was freed in the block
    assert (mem.allocated, mem.peak) == (truth.allocated, truth.peak)
    assert mem.unseen == ()
