"""Huge inputs answer at once, or with a capped summary (issue 20, section 4: fuzz H1, H3, and the acceptance:
a 10^8-element tensor, a 64-dimension tensor, a 10^5-op block).

Work is asserted, never time (timings are in benchmarks/): the Python memory a call allocates (``tracemalloc``'s
peak: copying ``range(10**8)`` into a tuple costs 800 MB there), the CPU allocator's own events (the profiler, for
torch memory), and how often a solver is allowed to work without a bound. Ground truth is torch's or NumPy's.
"""

from __future__ import annotations

import tracemalloc

import numpy as np
import pytest
import torch
from allocator_truth import allocator_figures

import tutorial_lib as tl
from tutorial_lib.facts.graph import preview

#: What a call on a huge tensor may allocate (Python objects, and torch memory): a small picture's worth.
SMALL_WORK_BYTES = 16 * 2**20
HUGE = 10**8


@pytest.fixture(autouse=True, scope="module")
def _profiler_warmed_up():
    """The profiler's first run in a process allocates tens of MB of its own: not the work measured."""
    allocator_figures(lambda: torch.ones(2) * 2)


def work_bytes(fn) -> tuple[int, int, object]:
    """(peak bytes of Python allocations, peak bytes the CPU allocator gave torch, result) of ``fn()``."""
    tracemalloc.start()
    try:
        figures, result = allocator_figures(fn)
        _, python_peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    return python_peak, figures.peak, result


def assert_small_work(fn):
    python_peak, torch_peak, result = work_bytes(fn)
    assert python_peak < SMALL_WORK_BYTES, f"{python_peak:,} bytes of Python objects"
    assert torch_peak < SMALL_WORK_BYTES, f"{torch_peak:,} bytes of tensors"
    return result


def huge_graph_tensor() -> torch.Tensor:
    """10^8 elements over 4 bytes of storage, with a graph: preview's long non-contiguous dimension (fuzz H1)."""
    x = torch.zeros(1, requires_grad=True)
    return (x * 2).expand(HUGE)


@pytest.mark.parametrize(
    "call",
    [
        pytest.param(lambda y: tl.inplace_hazards(y), id="inplace_hazards"),
        pytest.param(lambda y: tl.autograd_graph(y, names={"y": y}), id="autograd_graph"),
        pytest.param(lambda y: tl.graph_svg(y, show_values=True), id="graph_svg"),
        pytest.param(lambda y: tl.show_error(lambda: None, graph_of=y), id="show_error"),
        pytest.param(lambda y: preview(y), id="preview"),
    ],
)
def test_graph_functions_read_a_few_values_of_a_huge_non_contiguous_tensor(call):
    call((torch.zeros(1, requires_grad=True) * 2).expand(3))  # imports and first-call caches are not the work
    y = huge_graph_tensor()
    assert_small_work(lambda: call(y))


def test_graph_stepper_step_making_a_huge_expanded_tensor_does_little_work():
    steps = [("expand", "y = (x * 2).expand(10**8)"), ("slice", "z = y[::1000]")]
    warm = tl.GraphStepper([("small", "y = (x * 2).expand(3)")], setup="x = torch.zeros(1, requires_grad=True)")
    warm.step_forward()
    stepper = assert_small_work(lambda: tl.GraphStepper(steps, setup="x = torch.zeros(1, requires_grad=True)"))
    assert_small_work(stepper.step_forward)
    assert_small_work(stepper.step_forward)
    assert "(100000 values)" in stepper.summary or stepper.graph.nodes[0].value.endswith("(100000 values)]")


@pytest.mark.parametrize(
    "tensor",
    [
        torch.arange(24.0).reshape(2, 3, 4).permute(2, 0, 1),
        torch.arange(6.0).expand(4, 6),
        torch.arange(60.0).reshape(3, 4, 5)[:, ::2, 1:],
        torch.arange(3.0).reshape(3, 1).expand(3, 5).t(),
        torch.arange(10).reshape(1, 10)[:, ::3],
    ],
)
def test_preview_shows_the_first_values_in_row_major_order(tensor):
    first = tensor.reshape(-1)[:6].tolist()  # torch's own row-major order
    shown = preview(tensor)
    assert shown.startswith("[" + ", ".join(f"{v:.4g}" if isinstance(v, float) else str(v) for v in first))
    assert (f"({tensor.numel()} values)" in shown) == (tensor.numel() > 6)


# ---------------------------------------------------------------------------------- shares_memory and dimensions


def subset_sum_views(dims: int, seed: int, even_target: bool):
    """Two views of one storage whose overlap is a subset sum over ``dims`` random even strides (fuzz H3): a sum of
    strides at an odd offset never exists; at an even one, it may. The storage is virtual memory, never touched."""
    rng = np.random.default_rng(seed)
    strides = [int(s) * 2 for s in rng.integers(2**20, 2**21, size=dims)]
    span = sum(strides)
    base = torch.empty(span + 2, dtype=torch.uint8)
    many = base.as_strided((2,) * dims, strides)
    target = (span // 2) & ~1 if even_target else span // 2 | 1
    return many, base.as_strided((1,), (1,), target), strides, target


def subset_sum_truth(strides: list[int], target: int) -> bool:
    """Whether some subset of ``strides`` sums to ``target``: every subset sum, by sets (small inputs only)."""
    sums = {0}
    for stride in strides:
        sums |= {s + stride for s in sums}
    return target in sums


@pytest.mark.parametrize("seed", range(6))
@pytest.mark.parametrize("even_target", [False, True])
def test_shares_memory_on_a_subset_sum_never_runs_numpys_solver_unbounded(monkeypatch, seed, even_target):
    many, one, strides, target = subset_sum_views(20, seed, even_target)
    unbounded = []
    real = np.shares_memory

    def watched(a, b, max_work=None):
        if max_work is None:
            unbounded.append((a.shape, b.shape))
        return real(a, b, max_work=max_work)

    monkeypatch.setattr(np, "shares_memory", watched)
    answer = tl.shares_memory(many, one)
    assert answer == subset_sum_truth(strides, target)  # ground truth: every subset's sum
    assert answer == tl.shares_memory(one, many)
    assert not unbounded  # the exponential solver (6.4 s at 30 dimensions) was not run without a bound


def test_shares_memory_of_30_random_stride_dimensions_uses_a_bounded_search(monkeypatch):
    many, one, _, _ = subset_sum_views(30, 0, False)
    calls = []
    real = np.shares_memory
    monkeypatch.setattr(np, "shares_memory", lambda a, b, max_work=None: calls.append(max_work) or real(a, b, max_work))
    assert tl.shares_memory(many, one) is False  # an odd offset is no sum of even strides
    assert None not in calls


@pytest.mark.parametrize("dims", [64, 200])
def test_many_dimensions_that_continue_each_other_are_one(dims):
    """A 64-dimension tensor of 2s (and 200 with size-1 dimensions): contiguous, so one run of bytes; permuted,
    sliced and compared with a NumPy array over the same memory, the answers are NumPy's on the real arrays."""
    sizes = [2] * 16 + [1] * (dims - 16)
    x = torch.zeros(sizes).permute(*reversed(range(dims)))
    array = torch.zeros(2**16).numpy()
    over_array = torch.from_numpy(array).view(sizes)
    assert tl.shares_memory(x, x.as_strided((1,), (1,), 7)) is True
    assert tl.shares_memory(x[..., 1], x[..., 0]) is False  # the first dimension of 2s, now the last
    assert tl.shares_memory(over_array[0], over_array[1]) is False
    assert tl.shares_memory(over_array[0], array) is True
    assert tl.shares_memory(array[::2], over_array.reshape(-1)[1::2]) is np.shares_memory(array[::2], array[1::2])


# ------------------------------------------------------------------- the acceptance: every public function


def expanded_huge() -> torch.Tensor:
    """10^8 elements (4 bytes of storage): a huge tensor any function may be handed."""
    return torch.arange(3.0)[1:2].expand(HUGE)


def sixty_four_dims() -> torch.Tensor:
    """64 dimensions (16 of size 2), permuted: 65,536 elements whose layout is anything but simple."""
    return torch.arange(2.0**16).view([2] * 16 + [1] * 48).permute(*reversed(range(64)))


PUBLIC_CALLS = {
    "layout": lambda t: tl.layout(t),
    "layout_summary": lambda t: tl.layout_summary(t, t[..., :1] if t.dim() else t),
    "draw_layout": lambda t: plt_close(tl.draw_layout(t, t.flatten()[:1] if t.numel() < 10**6 else t[:1])),
    "shares_memory": lambda t: tl.shares_memory(t, t[..., :1]),
    "same_storage": lambda t: tl.same_storage(t, t[..., :1]),
    "view_or_copy": lambda t: tl.view_or_copy(["x[..., :1]", "x.detach()", "x.data", "x.unsqueeze(0)"], x=t),
    "op_table": lambda t: tl.op_table(["x[..., :1]", "x.detach()"], x=t)._repr_html_(),
    "view_copy_explorer": lambda t: tl.view_copy_explorer(t, operations=["x.detach()", "x.unsqueeze(0)"]),
    "autograd_graph": lambda t: tl.autograd_graph(graph_of(t)),
    "inplace_hazards": lambda t: tl.inplace_hazards(graph_of(t)),
    "graph_svg": lambda t: tl.graph_svg(graph_of(t), show_values=True),
    "draw_graph": lambda t: plt_close(tl.draw_graph(graph_of(t), show_values=True)),
    "show_error": lambda t: tl.show_error(lambda: None, graph_of=graph_of(t)),
    "trace_ops": lambda t: trace(lambda: t[..., :1].unsqueeze(0)),
}


def plt_close(figure):
    import matplotlib.pyplot as plt

    plt.close(figure)


def graph_of(t: torch.Tensor) -> torch.Tensor:
    """``t``'s layout with a graph behind it (``* 1`` of one leaf element, then the same strides)."""
    leaf = torch.ones(1, requires_grad=True)
    return (leaf * 1).as_strided(t.shape, [0] * t.dim()) if t.dim() else leaf * 1


def trace(fn):
    with tl.trace_ops() as records:
        fn()
    return records


@pytest.mark.parametrize("make", [expanded_huge, sixty_four_dims], ids=["1e8 elements", "64 dims"])
@pytest.mark.parametrize("name", list(PUBLIC_CALLS))
def test_every_public_function_answers_huge_inputs_with_little_work(name, make):
    import matplotlib

    matplotlib.use("Agg")
    PUBLIC_CALLS[name](torch.arange(6.0).view(2, 3))  # imports and first-call caches are not the work
    tensor = make()
    assert_small_work(lambda: PUBLIC_CALLS[name](tensor))
