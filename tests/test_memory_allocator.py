"""measure_memory on the CPU against the CPU allocator's own events (issue 13, section 1).

Ground truth comes from ``allocator_truth.allocator_figures``: the same work run again on identical inputs
under the public ``torch.profiler.profile(profile_memory=True)``, whose allocation and free events are added up
independently of ``tutorial_lib``; or from torch's objects (``untyped_storage().nbytes()``). Every case here
was reported wrong before measure_memory read the allocator (it saw only the storages aten ops return).
"""

import concurrent.futures
import contextlib
import copy
import io
import os
import pickle
import subprocess
import sys
import textwrap
import threading
import weakref

import pytest
import torch
from allocator_truth import allocator_figures
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from torch import nn

import tutorial_lib.facts.memory as memory_module
from tutorial_lib import measure_memory, trace_ops


def nbytes(t):
    return t.untyped_storage().nbytes()


def measured(fn):
    with measure_memory() as mem:
        result = fn()
    return mem, result


# ------------------------------------------------------------------ 1. scratch memory inside kernels
def _conv_inputs():
    torch.manual_seed(0)
    return torch.randn(1, 3, 256, 256), torch.randn(8, 3, 3, 3)


def _lstm_inputs():
    torch.manual_seed(0)
    lstm = nn.LSTM(32, 64, num_layers=2)
    inputs = torch.randn(20, 8, 32)
    lstm(inputs)  # first call: any one-off setup happens outside both measurements
    return lstm, inputs


KERNELS = {
    "boolean mask": (lambda: torch.randn(1000, 1000), lambda x: x[x > 0]),
    "round().unique()": (lambda: torch.randn(1000, 1000) * 100, lambda x: x.round().unique()),
    "median": (lambda: torch.randn(1000, 1000), lambda x: x.median()),
    "stride-2 conv2d": (_conv_inputs, lambda xw: nn.functional.conv2d(xw[0], xw[1], stride=2)),
    "linalg.inv": (lambda: torch.randn(500, 500) + 500 * torch.eye(500), torch.linalg.inv),
    "LSTM": (_lstm_inputs, lambda li: li[0](li[1])[0]),
    "sort": (lambda: torch.randn(2_000_000), lambda x: torch.sort(x).values),
}


@pytest.mark.parametrize("name", sorted(KERNELS))
def test_kernel_scratch_memory_counts_in_the_peak(name):
    make, work = KERNELS[name]
    inputs = make()
    truth, kept = allocator_figures(lambda: work(inputs))
    result_bytes = nbytes(kept)
    del kept
    mem, result = measured(lambda: work(inputs))
    assert (mem.allocated, mem.peak) == (truth.allocated, truth.peak)
    # the point of the case: the kernel held more than what it returns (the old figure was at most that)
    assert mem.peak > result_bytes == nbytes(result)
    assert [name for name, _ in mem.timeline] != []


# ------------------------------------------------------------------- 2. storage made without an aten op
STORAGE_MAKERS = {
    "copy.deepcopy": lambda x, blob: copy.deepcopy(x),
    "pickle.loads": lambda x, blob: pickle.loads(blob),
    "torch.UntypedStorage(n)": lambda x, blob: torch.UntypedStorage(x.numel() * x.element_size()),
    "torch.load": lambda x, blob: torch.load(io.BytesIO(blob)),
}


@pytest.mark.parametrize("name", sorted(STORAGE_MAKERS))
def test_storage_made_without_an_aten_op_is_counted(name):
    x = torch.randn(1000, 1000)
    blob = pickle.dumps(x)
    if name == "torch.load":
        buffer = io.BytesIO()
        torch.save(x, buffer)
        blob = buffer.getvalue()
    truth, kept = allocator_figures(lambda: STORAGE_MAKERS[name](x, blob))
    del kept
    mem, made = measured(lambda: STORAGE_MAKERS[name](x, blob))
    made_bytes = made.nbytes() if isinstance(made, torch.UntypedStorage) else nbytes(made)
    assert made_bytes == 4_000_000
    assert mem.allocated == truth.allocated >= made_bytes
    assert mem.peak == truth.peak


def test_storage_made_after_the_last_op_gets_a_named_timeline_entry():
    x = torch.ones(10)
    with measure_memory() as mem:
        y = x * 2
        storage = torch.UntypedStorage(1000)
    assert [name for name, _ in mem.timeline] == ["aten::mul", memory_module.OUTSIDE_ANY_OP]
    assert mem.timeline[-1][1] == mem.allocated == nbytes(y) + storage.nbytes()


def test_a_python_number_wrapped_for_an_op_counts_with_that_op():
    x = torch.ones(10)
    with measure_memory() as mem, trace_ops() as ops:
        y = x * 2  # the 2 becomes a 0-dim tensor just before aten::mul runs
    assert [name for name, _ in mem.timeline] == [r.name for r in ops] == ["aten::mul"]
    truth, kept = allocator_figures(lambda: x * 2)
    assert mem.peak == truth.peak > nbytes(y)


def test_share_memory_moves_the_storage_and_gives_the_old_block_back():
    x = torch.randn(1000, 1000)
    old_pointer = x.data_ptr()
    with measure_memory() as mem:
        x.share_memory_()
    assert x.is_shared() and x.data_ptr() != old_pointer  # ground truth: a new block, the old one released
    assert mem.peak == nbytes(x) == 4_000_000
    assert mem.allocated == 0


# -------------------------------------------------------------------------------------- 3. the device
@pytest.mark.parametrize("device", ["cpu:0", torch.device("cpu", 0), "cpu", torch.device("cpu"), None], ids=repr)
def test_every_name_of_the_cpu_measures_it(device):
    x = torch.ones(1000)
    with measure_memory(device) as mem:
        y = x + 1
    assert mem.device == torch.device("cpu")
    assert mem.allocated == nbytes(y) == 4000


@pytest.mark.parametrize("device", ["cpu:1", torch.device("cpu", 3)], ids=repr)
def test_a_cpu_that_does_not_exist_is_refused(device):
    with pytest.raises(ValueError, match="one device"):
        with measure_memory(device):
            pass


# ------------------------------------------------------------------------------------------ 4. threads
def test_a_thread_started_in_the_block_is_reported_unseen():
    kept = []
    with measure_memory() as mem:
        worker = threading.Thread(target=lambda: kept.append(torch.ones(1000)), name="maker")
        worker.start()
        worker.join()
    assert nbytes(kept[0]) == 4000
    # the profiler records only the calling thread: the tensor is found alive at the end and counted from there
    assert mem.allocated == 4000 and mem.allocations[-1].source == "another thread"
    assert len(mem.unseen) == 2 and "maker" in mem.unseen[0] and "thread" in mem.unseen[0]
    assert "4,000 B" in mem.unseen[1] and "from the end of the block" in mem.unseen[1]
    assert "unseen=2" in repr(mem)


def test_a_thread_pool_made_in_the_block_is_reported_unseen():
    with measure_memory() as mem:
        with concurrent.futures.ThreadPoolExecutor(1) as pool:
            result = pool.submit(torch.ones, 1000).result()
    assert nbytes(result) == 4000 and mem.allocated == 4000
    assert mem.unseen and "thread" in mem.unseen[0]


def test_a_block_without_threads_has_nothing_unseen_and_the_hook_is_put_back():
    def users_hook(frame, event, arg):
        return None

    threading.setprofile(users_hook)
    try:
        with measure_memory() as mem:
            y = torch.ones(10) * 2
        assert threading.getprofile() is users_hook
    finally:
        threading.setprofile(None)
    assert mem.unseen == () and mem.allocated == nbytes(y)


def test_the_users_thread_profile_hook_still_runs_in_new_threads():
    seen = []

    def users_hook(frame, event, arg):
        seen.append(threading.current_thread().name)

    threading.setprofile(users_hook)
    try:
        with measure_memory() as mem:
            worker = threading.Thread(target=lambda: None, name="hooked")
            worker.start()
            worker.join()
    finally:
        threading.setprofile(None)
    assert "hooked" in seen and mem.unseen


# ----------------------------------------------------------------- 5. other profilers, nesting, compile
def test_under_a_running_profiler_it_falls_back_and_says_so():
    x = torch.randn(1000, 1000)
    with torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CPU], profile_memory=True):
        with measure_memory() as mem:
            y = x[x > 0]
    assert mem.allocated == nbytes(y)  # the returned storages are still counted
    assert len(mem.unseen) == 1 and "profiler was already running" in mem.unseen[0]
    assert "already running" in mem.method


def test_a_profiler_started_inside_a_block_is_reported_unseen():
    x = torch.ones(1000)
    with measure_memory() as mem:
        y = x * 2  # noqa: F841 - an allocation that stays alive in the block
        with torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CPU], profile_memory=True) as prof:
            z = x * 3  # noqa: F841 - an op for the user's profiler to see
    assert any(event.name == "aten::mul" for event in prof.events())  # the user's profiler works
    assert len(mem.unseen) == 1 and "profiler was started inside the block" in mem.unseen[0]
    assert "takes the events over" in memory_module.__doc__


def test_nested_blocks_each_count_their_own_span():
    x = torch.randn(1000, 1000)
    with measure_memory() as outer:
        a = torch.ones(1000)  # 4,000 B
        with measure_memory() as inner:
            b = x[x > 0]  # scratch memory inside the inner block
            del a  # from before the inner block and untouched by its ops: the inner block sees it go too
        c = torch.ones(500)  # 2,000 B
    truth, kept = allocator_figures(lambda: x[x > 0])
    assert inner.allocated == nbytes(b) - 4000 and nbytes(b) == truth.allocated and inner.peak == truth.peak
    assert outer.allocated == nbytes(b) + nbytes(c)
    assert outer.peak == 4000 + truth.peak
    assert inner.unseen == outer.unseen == ()


def test_compiled_code_inside_a_block_is_counted():
    compiled = torch.compile(lambda t: t[t > 0].sin(), backend="eager")
    x = torch.randn(1000, 1000)
    compiled(x)  # compile outside both measurements
    truth, kept = allocator_figures(lambda: compiled(x))
    del kept
    mem, result = measured(lambda: compiled(x))
    assert (mem.allocated, mem.peak) == (truth.allocated, truth.peak)
    assert mem.peak > nbytes(result)


def test_trace_ops_inside_or_outside_sees_the_same_ops():
    x = torch.randn(100, 100)
    with trace_ops() as outside, measure_memory() as first:
        y = (x * 2).unique()
    with measure_memory() as second, trace_ops() as inside:
        z = (x * 2).unique()
    assert [r.name for r in outside] == [r.name for r in inside] == [n for n, _ in second.timeline]
    assert (first.allocated, first.peak) == (second.allocated, second.peak)
    assert first.allocated == nbytes(y) == nbytes(z)


# ------------------------------------------------------------------------------------ 6. nothing printed
def test_a_fresh_interpreter_prints_nothing():
    """The profiler's lines (kineto's start/stop, c10's warning about a block from before profiling) are C++
    writes to file descriptor 2, first made in a new process: checked there."""
    program = textwrap.dedent("""
        import torch, tutorial_lib as tl
        x = torch.randn(1000, 1000)
        with tl.measure_memory() as outer:
            x = x.relu()  # frees a block allocated before profiling: c10 warns about it
            with tl.measure_memory() as inner:
                y = x[x > 0]
        print(outer.allocated == y.untyped_storage().nbytes(), outer.peak > 0)
    """)
    env = {k: v for k, v in os.environ.items() if k != "KINETO_LOG_LEVEL"}
    done = subprocess.run([sys.executable, "-c", program], capture_output=True, text=True, env=env, timeout=120)
    assert done.returncode == 0, done.stderr
    assert done.stdout == "True True\n"
    assert done.stderr == ""


def test_other_writes_to_file_descriptor_2_are_passed_on(capfd):
    x = torch.randn(100, 100)
    with measure_memory() as mem:
        x = x.relu()
        os.write(2, b"a line of the user's\nUSDT: a profiler line\n")
    captured = capfd.readouterr()
    assert captured.err == "a line of the user's\n" and captured.out == ""
    assert mem.allocated == 0


# ---------------------------------------------------------------- 7. random workloads against the allocator
STEPS = {
    "mask": lambda t: t[t > 0],
    "unique": lambda t: t.round().unique(),
    "median": lambda t: t.median(),
    "sort": lambda t: t.sort().values,
    "mul": lambda t: t * 2,
    "cat": lambda t: torch.cat([t, t]),
    "matmul": lambda t: t.reshape(-1, 1)[:64] @ t.reshape(1, -1)[:, :64],
    "deepcopy": copy.deepcopy,
    "pickle": lambda t: pickle.loads(pickle.dumps(t)),
    "storage": lambda t: torch.UntypedStorage(t.numel()),
    "cumsum": lambda t: t.cumsum(0),
    "view": lambda t: t[::2],
    "inplace": lambda t: t.clone().mul_(3),
}


def run_steps(x, steps, with_thread):
    alive = []
    for name, pick, drop in steps:
        source = x if pick % 3 == 0 or not alive else alive[pick % len(alive)]
        if isinstance(source, torch.UntypedStorage):
            source = x
        alive.append(STEPS[name](source.reshape(-1)))  # a view: median's 0-dim result becomes 1-dim
        if drop and alive[:-1]:
            del alive[pick % (len(alive) - 1)]
    if with_thread:
        worker = threading.Thread(target=lambda: torch.ones(64).sum())
        worker.start()
        worker.join()
    return alive


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    st.integers(1, 20_000),
    st.lists(st.tuples(st.sampled_from(sorted(STEPS)), st.integers(0, 50), st.booleans()), min_size=1, max_size=6),
    st.booleans(),
)
def test_random_workloads_match_the_allocator(size, steps, with_thread):
    x = torch.randn(size)
    truth, kept = allocator_figures(lambda: run_steps(x, steps, with_thread))
    del kept
    with measure_memory() as mem:
        alive = run_steps(x, steps, with_thread)
    assert (mem.allocated, mem.peak) == (truth.allocated, truth.peak)
    assert bool(mem.unseen) == with_thread
    kept_bytes = {}
    for thing in alive:
        storage = thing if isinstance(thing, torch.UntypedStorage) else thing.untyped_storage()
        if storage.data_ptr() != x.untyped_storage().data_ptr():
            kept_bytes[storage.data_ptr()] = storage.nbytes()
    assert mem.allocated == sum(kept_bytes.values())  # what is left is exactly the storages still alive


@settings(max_examples=30, deadline=None)
@given(st.lists(st.sampled_from(["relu", "rebind_mask", "resize", "add_"]), min_size=1, max_size=5))
def test_frees_of_memory_from_before_the_block_are_counted(operations):
    """Rebinding frees the old tensor, resize_ moves it: memory from before the block given back inside it."""
    x = torch.randn(5000)
    before = nbytes(x)
    with measure_memory() as mem:
        for operation in operations:
            if operation == "relu":
                x = x.relu()
            elif operation == "rebind_mask":
                x = x[x > -10]  # keeps every element: same size, a new block
            elif operation == "resize":
                x.resize_(x.numel() + 1000)
            else:
                x.add_(1)
    assert mem.allocated == nbytes(x) - before
    assert mem.peak >= max(mem.allocated, 0)


def test_the_copy_made_by_another_dispatch_mode_is_counted_inside_it():
    """allow_mutation_on_saved_tensors copies a saved tensor through a dispatch mode of its own: the allocator
    reports the copy, so a block opened inside the context sees it (the aten-level watcher did not)."""
    a = torch.randn(1000, requires_grad=True)

    def program():
        b = a.clone()
        out = (b * b).sum()
        b.mul_(3)  # b is saved by MulBackward0: the context copies it (4,000 B) before the write
        return b, out

    with torch.autograd.graph.allow_mutation_on_saved_tensors():
        truth, kept = allocator_figures(program)
        del kept
        with measure_memory() as mem:
            kept = program()
    assert mem.allocated == truth.allocated >= 2 * nbytes(kept[0]) + nbytes(kept[1])  # b, its copy, out
    # documented: the one-value copy (8 bytes) that mode's Python layer makes of the number 3 is not counted
    assert mem.peak == truth.peak - 8
    assert "not the course's" in memory_module.__doc__


@pytest.mark.parametrize("fallback", [False, True], ids=["allocator", "under a running profiler"])
def test_foreach_updates_still_bump_versions_inside_a_block(fallback):
    """torch 2.13 skips the version bump of _foreach_*_ ops called from a dispatch mode: the block must not hide
    the error autograd raises without it (facts.watching.call_keeping_versions)."""
    a = torch.ones(3, requires_grad=True)
    saved = a * 1
    out = (saved * saved).sum()  # MulBackward0 saves `saved`
    profiler = (
        torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CPU])
        if fallback
        else contextlib.nullcontext()
    )
    with profiler, measure_memory() as mem:
        torch._foreach_add_([saved], [torch.ones(3)])
    assert bool(mem.unseen) == fallback
    with pytest.raises(RuntimeError, match="modified by an inplace operation"):
        out.backward()


# ------------------------------------------------------------------- 7. allocations on the op axis (issue 14)
def signed_stack(report, column):
    """What the report's allocations say is held after the op at ``column`` returned."""
    total = 0
    for allocation in report.allocations:
        made_by_then = allocation.allocated_at is None or allocation.allocated_at <= column
        gone = allocation.freed_at is not None and (
            allocation.freed_at < column or (allocation.freed_at == column and allocation.freed_inside)
        )
        if allocation.allocated_at is None:
            total -= allocation.nbytes if gone else 0
        elif made_by_then and not gone:
            total += allocation.nbytes
    return total


def check_allocations_add_up(report):
    """The allocations are the totals, column by column: the invariants every report keeps."""
    assert len(report.phases) == len(report.most_held) == len(report.timeline)
    for column, (name, held) in enumerate(report.timeline):
        assert signed_stack(report, column) == held, (column, name)
        assert report.most_held[column] >= held
    survivors = sum(a.nbytes for a in report.allocations if a.allocated_at is not None and a.freed_at is None)
    from_before = sum(a.nbytes for a in report.allocations if a.allocated_at is None)
    assert survivors - from_before == report.allocated
    assert max(report.most_held, default=0) == report.peak or not report.timeline
    names = [name for name, _ in report.timeline]
    for allocation in report.allocations:
        assert allocation.kind in memory_module.KINDS
        if allocation.allocated_at is not None:
            assert allocation.allocated_by == names[allocation.allocated_at]
            assert allocation.freed_at is None or allocation.freed_at >= allocation.allocated_at
        if allocation.freed_at is not None:
            assert allocation.freed_by == names[allocation.freed_at]
        else:
            assert not allocation.freed_inside


@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    st.integers(1, 20_000),
    st.lists(st.tuples(st.sampled_from(sorted(STEPS)), st.integers(0, 50), st.booleans()), min_size=1, max_size=6),
)
def test_allocations_are_the_allocators_own_events(size, steps):
    x = torch.randn(size)
    truth, kept = allocator_figures(lambda: run_steps(x, steps, False))
    del kept
    with measure_memory() as mem:
        alive = run_steps(x, steps, False)
    made = [a for a in mem.allocations if a.allocated_at is not None]
    assert len(made) == truth.allocations  # one entry per allocation event of the allocator
    check_allocations_add_up(mem)
    del alive


@settings(max_examples=20, deadline=None)
@given(st.lists(st.sampled_from(["relu", "rebind_mask", "resize", "add_"]), min_size=1, max_size=5))
def test_memory_from_before_the_block_is_freed_on_the_axis(operations):
    x = torch.randn(5000)
    with measure_memory() as mem:
        for operation in operations:
            if operation == "relu":
                x = x.relu()
            elif operation == "rebind_mask":
                x = x[x > -10]
            elif operation == "resize":
                x.resize_(x.numel() + 1000)
            else:
                x.add_(1)
    check_allocations_add_up(mem)
    assert all(a.kind == "from before the block" for a in mem.allocations if a.allocated_at is None)


def test_a_free_between_two_ops_belongs_to_the_op_before_it():
    x = torch.randn(1000)
    with measure_memory() as mem:
        total = (x * 2).sum()  # the product is let go as sum returns
        y = x.relu()
        y = y.relu()  # the first relu's result is let go as the second relu returns
    names = [name for name, _ in mem.timeline]
    assert names == ["aten::mul", "aten::sum", "aten::relu", "aten::relu"]
    product, first_relu = [a for a in mem.allocations if a.nbytes == 4000 and a.freed_at is not None]
    assert (product.allocated_by, product.freed_at, product.freed_inside) == ("aten::mul", 1, False)
    assert (first_relu.allocated_at, first_relu.freed_at, first_relu.freed_inside) == (2, 3, False)
    assert product.kind == first_relu.kind == "temporary"
    kept = sorted(a.nbytes for a in mem.allocations if a.freed_at is None)
    assert kept == sorted([nbytes(total), nbytes(y)])
    check_allocations_add_up(mem)


def test_scratch_memory_is_freed_inside_the_op_that_made_it():
    x = torch.randn(1000, 1000)
    truth, kept = allocator_figures(lambda: x[x > 0])
    del kept
    with measure_memory() as mem:
        kept = x[x > 0]
    scratch = [a for a in mem.allocations if a.kind == "scratch"]
    assert scratch and all(a.freed_inside and a.freed_at == a.allocated_at for a in scratch)
    assert mem.most_held[-1] == mem.peak == truth.peak > mem.timeline[-1][1]
    assert mem.allocated == nbytes(kept)
    check_allocations_add_up(mem)


def test_record_function_ranges_are_phases_and_not_ops():
    model = nn.Sequential(nn.Linear(16, 32), nn.ReLU(), nn.Linear(32, 4))
    optimizer = torch.optim.Adam(model.parameters())
    inputs = torch.randn(8, 16)
    with measure_memory() as mem, trace_ops() as ops:
        with torch.profiler.record_function("forward"):
            loss = model(inputs).sum()
        loss.backward()
        optimizer.step()
    names = [name for name, _ in mem.timeline]
    assert not any(name.startswith("profiler::") for name in names)
    assert names == [r.name for r in ops if not r.name.startswith("profiler::")]
    phases = list(dict.fromkeys(mem.phases))
    assert phases == ["forward", None, "backward", "Adam.step"]  # None: the starting gradient of backward()
    kinds = {a.kind for a in mem.allocations}
    assert {"activation", "gradient", "optimizer state"} <= kinds
    grads = sorted(nbytes(p.grad) for p in model.parameters())
    assert sorted(a.nbytes for a in mem.allocations if a.kind == "gradient") == grads
    state = sum(nbytes(v) for s in optimizer.state.values() for v in s.values())
    assert sum(a.nbytes for a in mem.allocations if a.kind == "optimizer state") == state
    assert all(mem.phases[a.allocated_at] == "Adam.step" for a in mem.allocations if a.kind == "optimizer state")
    check_allocations_add_up(mem)


def test_parameters_made_in_the_block_are_named_and_the_rest_is_unknown():
    with measure_memory() as mem:
        layer = nn.Linear(100, 10)
        out = layer(torch.ones(1, 100))
    parameter_bytes = sorted(nbytes(p) for p in layer.parameters())
    assert sorted(a.nbytes for a in mem.allocations if a.kind == "parameter") == parameter_bytes
    unknown = [a for a in mem.allocations if a.kind == "unknown"]
    assert nbytes(out) in [a.nbytes for a in unknown]
    assert "unknown" in memory_module.KINDS
    check_allocations_add_up(mem)


def test_nested_ranges_name_the_innermost_and_a_range_from_before_the_block_is_ignored():
    x = torch.ones(100)
    outer = torch.profiler.record_function("before the block")
    outer.__enter__()
    with measure_memory() as mem:
        a = x + 1
        with torch.profiler.record_function("step"):
            b = x * 2
            with torch.profiler.record_function("inner"):
                c = x - 1
            d = x / 2
        outer.__exit__(None, None, None)
        e = x.neg()
    assert mem.phases == (None, "step", "inner", "step", None)
    del a, b, c, d, e


def test_the_storage_tracker_places_allocations_the_same_way():
    """The fallback under a running profiler (and the CUDA path) keeps the same books from storages."""
    x = torch.randn(1000)
    with torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CPU]):
        with measure_memory() as mem:
            total = (x * 2).sum()
            y = x.relu()
            y = y.relu()
            with torch.profiler.record_function("last"):
                z = x.resize_(2000)
    assert mem.unseen
    check_allocations_add_up(mem)
    assert mem.phases[-1] == "last"
    product = next(a for a in mem.allocations if a.allocated_by == "aten::mul")
    assert (product.freed_at, product.freed_inside, product.kind) == (1, False, "temporary")
    assert [a.kind for a in mem.allocations if a.allocated_at is None] == ["from before the block"]
    del total, z


@pytest.mark.parametrize("fallback", [False, True], ids=["allocator", "under a running profiler"])
def test_an_op_that_raises_is_on_the_axis_and_the_books_still_add_up(fallback):
    x = torch.randn(1000)
    profiler = (
        torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CPU])
        if fallback
        else contextlib.nullcontext()
    )
    with profiler, pytest.raises(RuntimeError), measure_memory() as mem:
        y = x * 2
        x.view(3, -1)  # raises inside aten::view
    assert [name for name, _ in mem.timeline] == ["aten::mul", "aten::view"]
    check_allocations_add_up(mem)
    del y


def _note_when_freed(tensor, log: list, name: str) -> None:
    """Appends (name, whether autograd's engine was running) to ``log`` when ``tensor``'s storage is freed."""
    weakref.finalize(tensor.untyped_storage(), lambda: log.append((name, torch._C._current_graph_task_id() != -1)))


def _profiling(fallback: bool):
    """A running profiler (measure_memory then falls back to its storage tracker), or nothing."""
    if fallback:
        return torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CPU])
    return contextlib.nullcontext()


@pytest.mark.parametrize("fallback", [False, True], ids=["allocator", "under a running profiler"])
def test_only_what_backward_itself_frees_is_an_activation(fallback):
    """A tensor freed by ``del`` after backward() returned is no activation, though the free, between two ops,
    is placed after the last op of the backward pass; a saved tensor that backward lets go is one."""
    w = torch.randn(1000, requires_grad=True)
    freed = []
    with _profiling(fallback), measure_memory() as mem:
        y = w.sin()
        z = y.cos()
        loss = z.sum()
        _note_when_freed(y, freed, "y")
        _note_when_freed(z, freed, "z")
        _note_when_freed(loss, freed, "loss")
        loss.backward()
        del y, z, loss  # y was saved by CosBackward: backward let go of the graph's reference only
    assert freed == [("y", False), ("z", False), ("loss", False)]  # torch: all three freed after backward()
    made = {a.allocated_by: a for a in mem.allocations if a.allocated_at is not None and a.allocated_at < 3}
    assert set(made) == {"aten::sin", "aten::cos", "aten::sum"}
    assert all(a.kind == "temporary" and a.freed_at is not None for a in made.values())
    assert "activation" not in {a.kind for a in mem.allocations}
    check_allocations_add_up(mem)

    with _profiling(fallback), measure_memory() as mem:
        loss = (w * 3).sum()
        loss.backward()
        del loss
    total = next(a for a in mem.allocations if a.allocated_by == "aten::sum" and a.nbytes == 4)
    assert total.kind == "temporary"  # the old rule said "activation": its free went to backward's last op

    freed = []
    with _profiling(fallback), measure_memory() as mem:
        y = w.sin()  # saved by CosBackward, and held by nothing else once y is deleted
        _note_when_freed(y, freed, "y")
        loss = y.cos().sum()
        del y
        loss.backward()
        del loss
    assert freed == [("y", True)]  # torch: freed while the engine ran backward
    saved = next(a for a in mem.allocations if a.allocated_at == 0)
    assert (saved.allocated_by, saved.kind) == ("aten::sin", "activation")
    check_allocations_add_up(mem)


def test_a_dispatch_mode_around_measure_memory_sees_only_the_users_ops():
    """measure_memory looks at every live tensor; a jagged nested tensor answers .layout through the dispatcher, so
    without care an outer dispatch mode (here trace_ops) saw `prim::layout` calls the user never made."""
    kept = torch.nested.nested_tensor([torch.randn(2, 3), torch.randn(4, 3)], layout=torch.jagged)
    x = torch.randn(100, 100)
    with trace_ops() as outside, measure_memory():
        (x * 2).unique()
    assert [r.name for r in outside] == ["aten::mul", "aten::_unique2"]
    del kept
