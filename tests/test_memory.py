"""memory.py against ground truth: numel * element_size, the storages torch keeps alive, saved tensors.

The expected figures are computed from torch's own objects (``untyped_storage().nbytes()`` of what the
block left alive, the tensors autograd packs for backward, parameters' ``.grad``), never only written
down by hand.
"""

import gc
import weakref

import pytest
import torch
from allocator_truth import allocator_figures
from ground_truth import DTYPES
from hypothesis import given
from hypothesis import strategies as st
from torch import nn

from tutorial_lib import MemoryReport, format_bytes, measure_memory, trace_ops

cuda = pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA device")


def nbytes(t):
    return t.untyped_storage().nbytes()


def unique_storage_bytes(tensors, exclude=()):
    """Bytes of the distinct storages behind ``tensors``, leaving out those of ``exclude``."""
    excluded = {t.untyped_storage().data_ptr() for t in exclude}
    storages = {}
    for t in tensors:
        storage = t.untyped_storage()
        if storage.data_ptr() not in excluded:
            storages[storage.data_ptr()] = storage.nbytes()
    return sum(storages.values())


# ----------------------------------------------------------------------- 1. the course's key experiment
BIG = (10_000, 10_000)
BIG_BYTES = 400_000_000


def big():
    """A fresh float32 10000 x 10000 tensor of -1s; a function, not a fixture, so no one else holds it."""
    x = torch.full(BIG, -1.0)
    assert x.numel() * x.element_size() == nbytes(x) == BIG_BYTES
    return x


@pytest.mark.slow
def test_out_of_place_relu_allocates_a_second_tensor():
    x = big()
    with measure_memory() as mem:
        y = torch.relu(x)
    assert mem.allocated == mem.peak == BIG_BYTES == nbytes(y)
    assert y.untyped_storage().data_ptr() != x.untyped_storage().data_ptr()
    del y


@pytest.mark.slow
def test_in_place_relu_allocates_nothing():
    x = big()
    pointer = x.data_ptr()
    with measure_memory() as mem:
        x.relu_()
    assert mem.allocated == 0 and mem.peak == 0
    assert x.data_ptr() == pointer and not x.any()  # ground truth: same memory, values rewritten


@pytest.mark.slow
def test_temporary_counts_in_peak_only():
    x = big()
    with measure_memory() as mem:
        total = (x * 2).sum()
    assert mem.allocated == nbytes(total) == total.element_size() == 4
    # the temporary and the sum were alive together, with the wrapped 2 and the sum's scratch, whose size is
    # torch's own (12 B on torch 2.13, 68 B on 2.11): the allocator's events are the truth, not a bound on them
    truth, kept = allocator_figures(lambda: (x * 2).sum())
    assert mem.peak == truth.peak >= BIG_BYTES + nbytes(total)
    del total


@pytest.mark.slow
def test_rebinding_frees_the_old_tensor():
    x = big()
    old = weakref.ref(x.untyped_storage())
    with measure_memory() as mem:
        x = torch.relu(x)
    assert old() is None  # ground truth: the old storage is gone
    assert mem.allocated == 0
    assert mem.peak == BIG_BYTES == nbytes(x)
    del x


# ------------------------------------------------------------------------------- 2. allocation theory
@st.composite
def shapes(draw, min_dims=0, min_size=0):
    ndim = draw(st.integers(min_dims, 4))
    return tuple(draw(st.lists(st.integers(min_size, 5), min_size=ndim, max_size=ndim)))


def make(kind, shape, dtype, x):
    if kind == "empty":
        return torch.empty(shape, dtype=dtype)
    if kind == "zeros":
        return torch.zeros(shape, dtype=dtype)
    if kind == "clone":
        return x.clone()
    return x + x


@given(shapes(), st.sampled_from(DTYPES), st.sampled_from(["empty", "zeros", "clone", "add"]))
def test_new_tensor_allocates_numel_times_element_size(shape, dtype, kind):
    x = torch.ones(shape, dtype=dtype)
    with measure_memory() as mem:
        result = make(kind, shape, dtype, x)
    theory = result.numel() * result.element_size()
    assert theory == x.numel() * torch.empty((), dtype=dtype).element_size()
    assert mem.allocated == theory == nbytes(result)
    assert mem.peak == theory


CHAIN_OPS = {
    "mul": lambda t: t * 2,
    "add": lambda t: t + 1,
    "exp": lambda t: t.exp(),
    "sum": lambda t: t.sum(),
    "sum0": lambda t: t.sum(0) if t.dim() else t.sum(),
    "mT": lambda t: t.mT if t.dim() >= 2 else t.view_as(t),
    "reshape": lambda t: t.reshape(-1),
    "contiguous": lambda t: t.contiguous(),
    "clone": lambda t: t.clone(),
    "slice": lambda t: t[::2] if t.dim() else t,
    "cat": lambda t: torch.cat([t.reshape(-1), t.reshape(-1)]),
    "to64": lambda t: t.to(torch.float64),
    "outer": lambda t: t.reshape(-1, 1)[:4] @ t.reshape(1, -1)[:, :4],  # at most 4 x 4: chains stay small
    "relu_": lambda t: t.relu_() if t.dim() else t,
}


@given(
    shapes(min_dims=1, min_size=1),
    st.lists(
        st.tuples(st.sampled_from(sorted(CHAIN_OPS)), st.integers(0, 100), st.booleans()),
        min_size=1,
        max_size=8,
    ),
)
def test_chain_of_ops_leaves_what_is_kept_alive(shape, steps):
    """Random chains; after each step the source is dropped or kept. Truth: the storages still alive."""
    x = torch.randn(shape)
    with measure_memory() as mem:
        alive = [x]
        for name, pick, drop in steps:
            source = alive[pick % len(alive)]
            alive.append(CHAIN_OPS[name](source))
            if drop and source is not x:
                alive = [t for t in alive if t is not source]
            del source
    truth = unique_storage_bytes(alive, exclude=[x])
    assert mem.allocated == truth
    assert mem.peak >= mem.allocated
    del alive


def test_out_argument_that_grows_counts_the_growth():
    """torch.add(a, b, out=empty) resizes out's storage in place: that is memory allocated."""
    a = torch.ones(100)
    with measure_memory() as mem:
        out = torch.empty(0)
        torch.add(a, 1, out=out)
    assert mem.allocated == nbytes(out) == a.numel() * a.element_size()


def test_resize_of_an_earlier_tensor_counts_the_growth():
    x = torch.ones(10)
    before = nbytes(x)
    with measure_memory() as mem:
        x.resize_(1000)
    assert mem.allocated == nbytes(x) - before


def test_literals_count_once():
    """Tensor literals, index tensors and numpy views: counted as torch allocates them, never below 0."""
    x = torch.arange(12.0)
    with measure_memory() as mem:
        literal = torch.tensor([1.0, 2.0, 3.0])
    assert mem.allocated == nbytes(literal)
    with measure_memory() as mem:
        x[[0, 1]] = 0  # the index and value literals live only during the statement
    assert mem.allocated == 0 and mem.peak > 0
    with measure_memory() as mem:
        alias = torch.as_tensor(x.numpy())
    assert alias.untyped_storage().data_ptr() == x.untyped_storage().data_ptr()
    assert mem.allocated == 0
    with measure_memory() as mem:
        copy = torch.tensor(x.numpy())
    assert mem.allocated == mem.peak == nbytes(copy)


# ------------------------------------------------------------------------------------------ 3. autograd
def mlp():
    torch.manual_seed(0)
    return nn.Sequential(nn.Linear(8, 16), nn.ReLU(), nn.Linear(16, 4))


class SavedTensors:
    """Records, through autograd's pack hook, the storages saved for backward that are new in the block."""

    def __init__(self, existing):
        self.existing = {t.untyped_storage().data_ptr() for t in existing}
        self.storages = {}  # data_ptr -> (weak reference to the storage, nbytes)

    def pack(self, tensor):
        storage = tensor.untyped_storage()
        if storage.data_ptr() not in self.existing:
            self.storages[storage.data_ptr()] = (weakref.ref(storage), storage.nbytes())
        return tensor

    def hooks(self):
        return torch.autograd.graph.saved_tensors_hooks(self.pack, lambda tensor: tensor)

    def alive_bytes(self):
        return sum(size for ref, size in self.storages.values() if ref() is not None)

    def freed_bytes(self):
        return sum(size for ref, size in self.storages.values() if ref() is None)


@pytest.mark.parametrize("input_requires_grad", [False, True])
def test_forward_keeps_saved_tensors_and_output(input_requires_grad):
    model = mlp()
    x = torch.randn(5, 8, requires_grad=input_requires_grad)
    saved = SavedTensors([x, *model.parameters()])
    with measure_memory() as mem, saved.hooks():
        out = model(x)
    assert saved.storages, "autograd saved nothing new: the truth below would be trivial"
    out_ptr = out.untyped_storage().data_ptr()
    truth = saved.alive_bytes() + (0 if out_ptr in saved.storages else nbytes(out))
    assert mem.allocated == truth
    assert mem.peak >= mem.allocated

    with measure_memory() as mem, torch.no_grad():
        out_no_grad = model(x)
    assert mem.allocated == nbytes(out_no_grad) < truth
    assert mem.peak >= mem.allocated


@pytest.mark.parametrize("input_requires_grad", [False, True])
def test_backward_adds_gradients_and_frees_saved_tensors(input_requires_grad):
    model = mlp()
    x = torch.randn(5, 8, requires_grad=input_requires_grad)
    leaves = [x, *model.parameters()] if input_requires_grad else list(model.parameters())
    saved = SavedTensors([x, *model.parameters()])
    with saved.hooks():
        loss = model(x).sum()
    assert all(leaf.grad is None for leaf in leaves)
    alive_before = saved.alive_bytes()
    with measure_memory() as mem:
        loss.backward()
    gc.collect()
    grads = unique_storage_bytes([leaf.grad for leaf in leaves])
    assert saved.freed_bytes() == alive_before > 0  # ground truth: backward released what it saved
    assert mem.allocated == grads - saved.freed_bytes()
    assert mem.peak >= max(mem.allocated, 0)


# ------------------------------------------------------------------------------------------ 4. timeline
def test_timeline_follows_the_traced_ops():
    x = torch.randn(64, 32)
    with measure_memory() as mem, trace_ops() as ops:
        a = x * 2
        b = a.t().contiguous()
        del a
        b.add_(1)
        c = b.sum(0)
    assert len(mem.timeline) == len(ops)
    assert [name for name, _ in mem.timeline] == [r.name for r in ops]
    assert mem.timeline[-1][1] == mem.allocated == nbytes(b) + nbytes(c)
    assert max(held for _, held in mem.timeline) <= mem.peak
    # the peak was reached while a and b were both alive
    assert mem.peak == 2 * x.numel() * x.element_size()


def test_timeline_ends_before_frees_that_follow_the_last_op():
    """Each entry is read when its op returns: a temporary freed after the last op is in .allocated only."""
    x = torch.randn(64, 32)
    with measure_memory() as mem, trace_ops() as ops:
        total = (x * 2).sum()
    assert len(mem.timeline) == len(ops) == 2
    assert mem.timeline[-1][1] == mem.allocated + x.numel() * x.element_size()
    assert mem.allocated == nbytes(total)
    assert max(held for _, held in mem.timeline) <= mem.peak


# -------------------------------------------------------------------------------------- 5. no printing
def test_measuring_prints_nothing(capfd):
    x = torch.randn(100, 100)
    with measure_memory() as mem:
        y = torch.relu(x) @ x
        y.add_(1)
        del y
    repr(mem)
    captured = capfd.readouterr()
    assert captured.out == "" and captured.err == ""
    assert mem.allocated == 0 and mem.peak > 0


# ---------------------------------------------------------------------------- 6. devices, errors, bytes
@pytest.mark.skipif(torch.cuda.is_available(), reason="CUDA is available here: measuring it is legitimate")
@pytest.mark.parametrize("device", ["cuda", "cuda:0", torch.device("cuda")], ids=str)
def test_cuda_without_cuda_is_an_error_not_zeros(device):
    assert torch.cuda.memory_allocated() == 0  # what a silent measurement would have reported
    with pytest.raises(ValueError, match="CUDA"):
        with measure_memory(device):
            pass


@pytest.mark.parametrize(
    ("device", "error"),
    [("tpu", ValueError), ("meta", ValueError), (3, TypeError), ("not a device", ValueError), (1.5, TypeError)],
    ids=repr,
)
def test_bad_device_is_rejected_by_name(device, error):
    with pytest.raises(error, match="device"):
        with measure_memory(device):
            pass


def test_default_device_is_the_cpu():
    with measure_memory() as mem:
        pass
    assert mem.device == torch.get_default_device() == torch.device("cpu")
    assert isinstance(mem, MemoryReport) and mem.reserved is None
    assert mem.allocated == mem.peak == 0 and mem.timeline == ()


def test_a_block_that_raises_still_fills_the_report():
    with pytest.raises(RuntimeError, match="boom"):
        with measure_memory() as mem:
            kept = torch.ones(10, dtype=torch.float64)
            raise RuntimeError("boom")
    assert mem.allocated == mem.peak == nbytes(kept) == 80


def test_report_is_marked_unfinished_inside_the_block():
    with measure_memory() as mem:
        assert mem.allocated is None and "still measuring" in repr(mem)
    assert "still measuring" not in repr(mem)


def test_format_bytes():
    assert format_bytes(400_000_000) == "400,000,000 B (381.47 MiB)"
    assert format_bytes(0) == "0 B"
    assert format_bytes(1023) == "1,023 B"
    assert format_bytes(4096) == "4,096 B (4.00 KiB)"
    assert format_bytes(2**20) == "1,048,576 B (1.00 MiB)"
    assert format_bytes(2**20 - 1) == "1,048,575 B (1024.00 KiB)"
    assert format_bytes(3 * 2**30) == "3,221,225,472 B (3.00 GiB)"
    assert format_bytes(-512) == "-512 B"
    assert format_bytes(-4096) == "-4,096 B (-4.00 KiB)"


@pytest.mark.parametrize("value", [400e6, "400", None, True, torch.tensor(4)], ids=repr)
def test_format_bytes_rejects_non_ints(value):
    with pytest.raises(TypeError, match=r"\bn\b"):
        format_bytes(value)


# ------------------------------------------------------------------------------------------- 7. GPU
def cuda_work(device):
    """The same block on either device: returns what it keeps, so both reports cover the same tensors."""
    x = torch.full((1000, 333), -1.0, device=device)  # 1,332,000 bytes: not a multiple of 512
    with measure_memory(device) as mem, trace_ops() as ops:
        y = torch.relu(x)
        z = (y * 2 + 1)[::2]
        w = torch.ones(7, device=device)
        x = x.relu()
    return mem, ops, (x, y, z, w)


@cuda
def test_cuda_and_cpu_agree_within_allocator_rounding():
    cuda_work("cuda")  # warm-up: first-use allocations outside the measured figures
    cpu_mem, cpu_ops, cpu_kept = cuda_work("cpu")
    gpu_mem, gpu_ops, gpu_kept = cuda_work("cuda")
    allocations = sum(1 for r in cpu_ops if r.kind == "new")
    assert [r.name for r in cpu_ops] == [r.name for r in gpu_ops]
    assert allocations == sum(1 for r in gpu_ops if r.kind == "new") > 0
    # x was replaced by a tensor of the same size: what is left is y, z's storage and w, each rounded up
    assert cpu_mem.allocated == unique_storage_bytes(cpu_kept[1:])
    assert gpu_mem.allocated == sum(-(-nbytes(t) // 512) * 512 for t in gpu_kept[1:])
    for figure in ("allocated", "peak"):
        cpu_value, gpu_value = getattr(cpu_mem, figure), getattr(gpu_mem, figure)
        assert 0 <= gpu_value - cpu_value < 512 * allocations, figure
    assert gpu_mem.reserved is not None and cpu_mem.reserved is None
    assert len(gpu_mem.timeline) == len(gpu_ops)


def test_storage_read_by_torch_load_is_counted():
    # torch.load builds its storages without an aten op: the CPU allocator still makes them, so they count.
    import io

    buffer = io.BytesIO()
    torch.save(torch.arange(1000.0), buffer)
    buffer.seek(0)
    with measure_memory() as report:
        loaded = torch.load(buffer)
    assert loaded.untyped_storage().nbytes() == 4000
    assert report.allocated == 4000


def test_format_bytes_accepts_numpy_integers_and_still_refuses_bools():
    import numpy as np

    assert format_bytes(np.int64(1024)) == format_bytes(1024) == "1,024 B (1.00 KiB)"
    assert format_bytes(np.uint32(5)) == "5 B"
    with pytest.raises(TypeError):
        format_bytes(np.float64(1024.0))
    with pytest.raises(TypeError):
        format_bytes(False)


def test_a_gradient_is_a_gradient_by_its_role_even_when_a_later_step_frees_it():
    """Issue 22: with three steps in one block, the gradients of steps 1 and 2 (freed by the next zero_grad) were
    'temporary'; a tensor that was a parameter's .grad is 'gradient' whether or not it survives the block."""
    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Linear(16, 32), torch.nn.ReLU(), torch.nn.Linear(32, 4))
    adam = torch.optim.Adam(model.parameters())
    inputs = torch.randn(8, 16)
    with measure_memory() as mem:
        for _ in range(3):
            adam.zero_grad()  # set_to_none: frees the previous step's gradients
            model(inputs).square().sum().backward()
            adam.step()
    gradients = [a for a in mem.allocations if a.kind == "gradient"]
    parameter_bytes = sum(p.nbytes for p in model.parameters())
    assert sorted(a.nbytes for a in gradients) == sorted(p.nbytes for p in model.parameters() for _ in range(3))
    assert sum(a.nbytes for a in gradients if a.freed_at is not None) == 2 * parameter_bytes  # steps 1 and 2


def test_held_before_is_what_the_allocator_held_when_the_block_began():
    kept = []
    with measure_memory() as first:
        kept.append(torch.empty(1000))
    with measure_memory() as second:
        kept.append(torch.empty(10))
    with measure_memory() as third:
        kept.clear()
    assert first.allocated == 4000 and second.allocated == 40 and third.allocated == -4040
    assert second.held_before - first.held_before == 4000
    assert third.held_before - second.held_before == 40
    assert first.held_before >= 0
