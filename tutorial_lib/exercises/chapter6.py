"""Chapter 6 exercises and quick predictions: predicting allocated bytes, Adam's optimizer state, halving a
function's peak memory; the bytes a ReLU allocates, allocated versus peak, the parts of a training step, what
checkpointing keeps and whether autocast saves memory.

Every checker measures with ``measure_memory`` and torch itself: the block of the prediction exercise is run
for real, Adam's state is measured by running ``optimizer.step()`` on fresh models (one of them with a layer
that ``forward`` never uses, whose parameters get no gradient and so no state), and the learner's
rewritten function is run on fresh tensors whose peak, values and untouched input are checked. Because
``measure_memory`` counts only PyTorch's CPU allocator in the calling thread, that checker also adds NumPy's and
Python's peak (``tracemalloc``), rejects a function that starts a thread (``MemoryReport.unseen``), and rejects a
result whose storage it did not see being made (NumPy, or a thread pool made before the call, which cannot be
detected otherwise).
"""

from __future__ import annotations

import contextlib
import numbers
import tracemalloc

import torch
from torch import nn

from ..facts.memory import format_bytes, measure_memory
from ..facts.storage import shares_memory
from . import correct, exercise, prediction, wrong


def _as_whole_number(answer) -> int | None:
    """The learner's number of bytes as an int (``500004``, ``500_004.0``, a 0-d integer tensor), or None."""
    if isinstance(answer, bool):
        return None
    if isinstance(answer, torch.Tensor):
        if answer.numel() != 1 or (answer.is_floating_point() and not float(answer.item()).is_integer()):
            return None
        return int(answer.item())
    if isinstance(answer, numbers.Integral):
        return int(answer)
    if isinstance(answer, numbers.Real) and float(answer).is_integer():
        return int(answer)
    return None


# --- ch6.predict_bytes ----------------------------------------------------------------------------------


def predict_bytes_block():
    """The block of the exercise, run for real under ``measure_memory``: returns its ``MemoryReport``."""
    x = torch.ones(1000, 1000)
    with measure_memory() as mem:
        a = x.t()  # noqa: F841  (part of the program the learner reads)
        b = x[:, :250].contiguous()
        c = b.to(torch.float16)  # noqa: F841
        x.mul_(2)
        d = (b * 2).sum()  # noqa: F841
        del b
    return mem


@exercise("ch6.predict_bytes")
def check_predict_bytes(answer):
    predicted = _as_whole_number(answer)
    if predicted is None:
        return wrong("the answer should be a whole number of bytes, e.g. answer = 1_000_000.", "count bytes, not MiB.")
    mem = predict_bytes_block()
    truth = mem.allocated
    if predicted == truth:
        return correct(
            f"the block leaves {format_bytes(truth)} allocated: c (250,000 float16 values, 2 bytes each) and the "
            "4-byte sum d. The view, the in-place mul_, the temporary b * 2 and the deleted b add nothing."
        )
    b_bytes, c_bytes, d_bytes, x_bytes = 250_000 * 4, 250_000 * 2, 4, 1000 * 1000 * 4
    # the peak as the tensors alone make it (b, c, b * 2, d), or as the allocator saw it (a few bytes of scratch more)
    if predicted in (mem.peak, b_bytes + c_bytes + b_bytes + d_bytes):
        return wrong(
            f"{format_bytes(predicted)} is the block's peak, the most it held at one moment.",
            "that is .peak; .allocated is what is still alive when the block ends, and by then the temporary b * 2 and "
            "b itself are gone.",
        )
    if predicted == truth + b_bytes:
        return wrong("you counted b.", "`del b` drops the last reference to b, and its storage is freed on the spot.")
    if predicted in (2 * c_bytes + d_bytes, 2 * c_bytes + d_bytes + b_bytes):
        return wrong(
            "you counted c as float32.",
            "b.to(torch.float16) makes a copy with 2 bytes per element: 250,000 × 2.",
        )
    if predicted == truth - d_bytes:
        return wrong("you left out d.", "the sum is a tensor too: one float32 value, 4 bytes.")
    if predicted >= x_bytes:
        return wrong(
            f"{format_bytes(predicted)} is at least the size of x, which existed before the block.",
            "x.t() is a view (no new memory) and x.mul_(2) writes into x's own storage.",
        )
    return wrong(
        f"{format_bytes(predicted)} is not what the block leaves allocated.",
        "go line by line: which lines create new storage (and how many bytes per element), and which of those "
        "storages are still referenced when the block ends?",
    )


# --- ch6.adam_state_bytes -------------------------------------------------------------------------------


class _TiedEmbedding(nn.Module):
    """A tiny language-model head whose output layer reuses the embedding's weight (one Parameter, used twice)."""

    def __init__(self):
        super().__init__()
        self.embed = nn.Embedding(100, 16)
        self.out = nn.Linear(16, 100, bias=False)
        self.out.weight = self.embed.weight

    def forward(self, tokens):
        return self.out(self.embed(tokens))


class _WithUnusedLayer(nn.Module):
    """A model with a registered layer that ``forward`` never calls: its parameters require grad, but their
    ``.grad`` stays None after backward, so Adam's ``step()`` skips them (``torch/optim/adam.py``, ``_init_group``:
    ``if p.grad is not None``)."""

    def __init__(self):
        super().__init__()
        self.used = nn.Linear(32, 4)
        self.unused = nn.Linear(32, 64)  # e.g. a head kept for another task

    def forward(self, inputs):
        return self.used(inputs)


class _WithZeroWeightedHead(nn.Module):
    """A model whose auxiliary head enters the output with weight 0: backward gives the head's parameters a
    gradient of zeros, which is not None, so Adam's ``step()`` gives them state like any other."""

    def __init__(self):
        super().__init__()
        self.used = nn.Linear(32, 4)
        self.auxiliary = nn.Linear(32, 16)

    def forward(self, inputs):
        return self.used(inputs) + 0.0 * self.auxiliary(inputs).sum()


def _adam_cases():
    """(description, model, input) for the models the checker tries, each built from a fixed seed."""
    torch.manual_seed(0)
    yield "an MLP (float32)", nn.Sequential(nn.Linear(32, 64), nn.ReLU(), nn.Linear(64, 4)), torch.randn(8, 32)
    torch.manual_seed(0)
    frozen = nn.Sequential(nn.Linear(32, 64), nn.LayerNorm(64), nn.Linear(64, 4, bias=False))
    frozen[0].requires_grad_(False)
    yield "a model whose first layer is frozen", frozen, torch.randn(8, 32)
    torch.manual_seed(0)
    yield "a model with a layer that forward() never uses", _WithUnusedLayer(), torch.randn(8, 32)
    torch.manual_seed(0)
    yield "a model whose auxiliary head has all-zero gradients", _WithZeroWeightedHead(), torch.randn(8, 32)
    torch.manual_seed(0)
    half = nn.Sequential(nn.Linear(32, 64), nn.ReLU(), nn.Linear(64, 4)).to(torch.bfloat16)
    yield "a bfloat16 MLP", half, torch.randn(8, 32, dtype=torch.bfloat16)
    torch.manual_seed(0)
    yield "a model with a tied (shared) weight", _TiedEmbedding(), torch.randint(0, 100, (8,))


def _compute_grads(model: nn.Module, inputs: torch.Tensor) -> None:
    model.zero_grad(set_to_none=True)
    model(inputs).float().sum().backward()


def measured_adam_state_bytes(model: nn.Module) -> int:
    """Run Adam's first ``step()`` on a model whose gradients are computed; return the bytes it left allocated."""
    optimizer = torch.optim.Adam(model.parameters(), lr=1e-3)
    with measure_memory() as mem:
        optimizer.step()
    return mem.allocated


@exercise("ch6.adam_state_bytes", function="def adam_state_bytes(model): ...")
def check_adam_state_bytes(fn):
    for description, model, inputs in _adam_cases():
        _compute_grads(model, inputs)  # the moment just before optimizer.step()
        answer = fn(model)
        if answer is None:
            return wrong(
                f"for {description} your function returned None.", "end it with `return` and the number of bytes."
            )
        predicted = _as_whole_number(answer)
        if predicted is None:
            return wrong(
                f"for {description} your function returned {answer!r}, not a whole number of bytes.", "return an int."
            )
        truth = measured_adam_state_bytes(model)
        if predicted == truth:
            continue
        all_params = list(model.parameters())
        with_grad = [p for p in all_params if p.grad is not None]  # what Adam's step() gives state to
        requiring_grad = [p for p in all_params if p.requires_grad]

        def moments_of(params, bytes_per_value=None):
            return sum(2 * p.numel() * (bytes_per_value or p.element_size()) for p in params)

        moments, steps = moments_of(with_grad), 4 * len(with_grad)
        message = (
            f"for {description} you said {format_bytes(predicted)}; optimizer.step() allocated {format_bytes(truth)}."
        )
        if predicted == moments:
            return wrong(
                message,
                "you are 4 bytes short per parameter tensor: Adam also keeps a step counter, a one-element float32 "
                "tensor, per parameter.",
            )
        if predicted in (moments // 2, moments // 2 + steps):
            return wrong(
                message,
                "Adam keeps two tensors per parameter (exp_avg and exp_avg_sq), each the size of the parameter.",
            )
        if predicted in (moments_of(with_grad, 4) + steps, moments_of(with_grad, 4)):
            return wrong(
                message,
                "the moment tensors are made with zeros_like(param): they take the parameter's dtype (2 bytes per "
                "element in bfloat16), only the step counter is float32.",
            )
        if {id(p) for p in requiring_grad} != {id(p) for p in with_grad} and predicted in (
            moments_of(requiring_grad) + 4 * len(requiring_grad),
            moments_of(requiring_grad),
        ):
            return wrong(
                message,
                "requires_grad is not what Adam looks at: step() gives state only to parameters whose .grad is not "
                "None. A layer that forward() never used has requires_grad=True but no gradient, so it gets no state.",
            )
        with_nonzero_grad = [p for p in with_grad if bool(p.grad.any())]
        if len(with_nonzero_grad) != len(with_grad) and predicted in (
            moments_of(with_nonzero_grad) + 4 * len(with_nonzero_grad),
            moments_of(with_nonzero_grad),
        ):
            return wrong(
                message,
                "a gradient full of zeros is still a gradient: its .grad is not None, so Adam gives the parameter "
                "state.",
            )
        if predicted in (moments_of(all_params) + 4 * len(all_params), moments_of(all_params)):
            return wrong(
                message, "a frozen parameter (requires_grad=False) gets no gradient, and Adam keeps no state for it."
            )
        per_module = sum(
            2 * p.numel() * p.element_size() + 4
            for module in model.modules()
            for p in module.parameters(recurse=False)
            if p.grad is not None
        )
        if per_module != truth and predicted == per_module:
            return wrong(
                message,
                "you counted a shared parameter twice: model.parameters() lists each Parameter once, and Adam keeps "
                "state once per Parameter.",
            )
        return wrong(
            message,
            "for every parameter whose .grad is not None when step() runs: two state tensors the size and dtype of "
            "the parameter, plus a 4-byte step counter.",
        )
    return correct(
        "your numbers match what Adam's first step() allocated on every model tried: two moments per parameter that "
        "has a gradient, in the parameter's own dtype, plus a 4-byte step counter each."
    )


# --- ch6.reduce_peak -----------------------------------------------------------------------------------


def standardize_rows(x: torch.Tensor) -> torch.Tensor:
    """The function of the exercise: each row shifted to mean 0 and scaled to standard deviation 1."""
    mean = x.mean(dim=1, keepdim=True)
    centered = x - mean
    squared = centered * centered
    var = squared.mean(dim=1, keepdim=True)
    std = torch.sqrt(var + 1e-5)
    return centered / std


def _peak_inputs():
    torch.manual_seed(0)
    yield torch.randn(1000, 500) * 3 + 1
    yield torch.randn(300, 200) - 2
    yield torch.randn(64, 1024, dtype=torch.float64) * 0.5


@contextlib.contextmanager
def _python_allocations():
    """The peak bytes allocated through Python's allocator inside the block (NumPy's arrays included), which
    ``measure_memory`` does not see: yields a one-element list filled in when the block ends."""
    result = [0]
    was_tracing = tracemalloc.is_tracing()
    if not was_tracing:
        tracemalloc.start()
    start = tracemalloc.get_traced_memory()[0]
    tracemalloc.reset_peak()
    try:
        yield result
    finally:
        result[0] = max(0, tracemalloc.get_traced_memory()[1] - start)
        if not was_tracing:
            tracemalloc.stop()


@exercise("ch6.reduce_peak", function="def standardize_rows_low_peak(x): ...")
def check_reduce_peak(fn):
    for x in _peak_inputs():
        shape = "×".join(map(str, x.shape))
        with measure_memory() as original:
            expected = standardize_rows(x)
        before, version_before = x.clone(), x._version
        # The previous input's result goes here, not inside the block (measure_memory would count its free), and
        # tracemalloc runs inside measure_memory: the watcher's own bookkeeping (a few hundred bytes for each
        # storage alive when the block starts) is Python memory, made before and dropped after the function runs.
        result = None
        with measure_memory() as mem, _python_allocations() as python_peak:
            result = fn(x)
        if mem.unseen:  # a thread the profiler does not record: the peak below would not be the truth
            return wrong(
                f"for a {shape} input your function did work that measure_memory cannot count: {mem.unseen[0]}.",
                "compute with torch operations in the calling thread, so that every allocation is measured.",
            )
        if x._version != version_before or not torch.equal(x, before):
            return wrong(
                f"your function changed its input (a {shape} {x.dtype} tensor).",
                "the caller's x must stay as it was: write in place only into tensors your function created.",
            )
        if not isinstance(result, torch.Tensor):
            return wrong(
                f"for a {shape} input your function returned {type(result).__name__}, not a tensor.",
                "return the standardized tensor.",
            )
        if result.shape != expected.shape or result.dtype != expected.dtype:
            return wrong(
                f"for a {shape} {x.dtype} input the result has shape {tuple(result.shape)} and dtype {result.dtype}.",
                "keep the input's shape and dtype.",
            )
        if shares_memory(result, x):
            return wrong(
                "the result shares memory with the input.", "return a new tensor; the input must stay as it was."
            )
        if not torch.allclose(result, expected, rtol=1e-4, atol=1e-5):
            worst = (result - expected).abs().max().item()
            return wrong(
                f"for a {shape} input the values differ from standardize_rows(x) by up to {worst:.3g}.",
                "use the population variance (unbiased=False), add 1e-5 before the square root, and divide the "
                "centered values.",
            )
        if mem.allocated < result.untyped_storage().nbytes():
            return wrong(
                f"for a {shape} input the result's memory was not allocated by PyTorch's CPU allocator in the calling "
                "thread (NumPy, or a thread that existed before the call?), so your function's peak cannot be "
                "measured.",
                "compute with torch operations in the calling thread: measure_memory counts what PyTorch's CPU "
                "allocator allocates in the thread that runs the block.",
            )
        # NumPy's arrays are invisible to measure_memory but traced by tracemalloc. Under 64 KiB it is the
        # interpreter's and the watcher's own bookkeeping (the smallest input tried is 240,000 bytes).
        python_bytes = python_peak[0] if python_peak[0] >= 2**16 else 0
        peak = mem.peak + python_bytes
        limit = original.peak // 2
        if peak > limit:
            numpy_note = f" ({format_bytes(python_bytes)} of it NumPy's or Python's)" if python_bytes else ""
            return wrong(
                f"for a {shape} input your peak is {format_bytes(peak)}{numpy_note}; the original's is "
                f"{format_bytes(original.peak)}, "
                f"so the target is at most {format_bytes(limit)}.",
                "the result alone is one x-sized tensor. Avoid a second one alive at the same time: get the variance "
                "without an x-sized temporary (torch.var_mean) and divide in place (div_) into the tensor you will "
                "return.",
            )
    return correct(
        f"same values as standardize_rows, input untouched, and the peak is at most half the original's on every input "
        f"tried (last one: {format_bytes(peak)} against {format_bytes(original.peak)})."
    )


# --- quick predictions ----------------------------------------------------------------------------------
# Each truth is measured when the check runs, on the tensors and models the notebook uses.


def _relu_bytes_truth() -> tuple[int, int]:
    """Bytes left allocated by F.relu(x), then by F.relu_(x), for a 1000 x 1000 float32 x."""
    x = torch.randn(1000, 1000)
    with measure_memory() as out_of_place:
        y = torch.nn.functional.relu(x)  # noqa: F841  (kept alive until the measurement ends)
    with measure_memory() as in_place:
        torch.nn.functional.relu_(x)
    return out_of_place.allocated, in_place.allocated


prediction(
    "ch6.q_relu_bytes",
    _relu_bytes_truth,
    why="F.relu(x) makes a new tensor the size of x: 1,000,000 values of 4 bytes. F.relu_(x) writes its results "
    "over x and makes nothing new.",
    mistakes={
        (4_000_000, 4_000_000): "relu_ writes into x's own storage, so it allocates nothing.",
        (0, 0): "out of place means a new result tensor, as large as x.",
        (1_000_000, 0): "that counts values; each float32 value takes 4 bytes.",
        (0, 4_000_000): "it is the other way round: the out-of-place relu makes the new tensor.",
    },
)


def _sum_peak_truth() -> str:
    """Which figure of ``(x * 2).sum()`` reaches the size of x: allocated, peak, both or neither."""
    x = torch.randn(1000, 1000)
    with measure_memory() as mem:
        total = (x * 2).sum()  # noqa: F841
    big = tuple(name for name, value in (("allocated", mem.allocated), ("peak", mem.peak)) if value >= x.nbytes)
    return {(): "neither", ("allocated",): "allocated", ("peak",): "peak", ("allocated", "peak"): "both"}[big]


prediction(
    "ch6.q_sum_peak",
    _sum_peak_truth,
    why="x * 2 is a temporary as large as x. It has no name, so it is freed once .sum() has read it: the block "
    "leaves only the 4-byte sum, but its peak includes the whole temporary.",
    choices=("allocated", "peak", "both", "neither"),
    mistakes={
        "both": "the temporary x * 2 is gone when the block ends; only the 4-byte sum is left allocated.",
        "neither": "for a moment the block holds x * 2, a tensor as large as x, and the peak counts that moment.",
        "allocated": "what the block leaves is the 4-byte sum; the large tensor existed only in between.",
    },
)


def make_mlp(seed: int = 0) -> nn.Sequential:
    """The chapter's multilayer perceptron: 256 inputs, two hidden layers of 1024, 10 classes."""
    torch.manual_seed(seed)
    return nn.Sequential(nn.Linear(256, 1024), nn.ReLU(), nn.Linear(1024, 1024), nn.ReLU(), nn.Linear(1024, 10))


def _chapter_batch() -> tuple[torch.Tensor, torch.Tensor]:
    torch.manual_seed(1)
    return torch.randn(512, 256), torch.randint(0, 10, (512,))


def _step_parts_truth() -> tuple[int, int]:
    """The gradients' and Adam's state's bytes after one training step, in units of the parameters' bytes."""
    model = make_mlp()
    inputs, targets = _chapter_batch()
    adam = torch.optim.Adam(model.parameters(), lr=1e-3)
    adam.zero_grad()
    torch.nn.functional.cross_entropy(model(inputs), targets).backward()
    adam.step()
    parameters = sum(p.nbytes for p in model.parameters())
    gradients = sum(p.grad.nbytes for p in model.parameters())
    state = sum(value.nbytes for per_param in adam.state.values() for value in per_param.values())
    return round(gradients / parameters), round(state / parameters)


prediction(
    "ch6.q_step_parts",
    _step_parts_truth,
    why="in this MLP backward gives each parameter a dense gradient of its own shape and dtype: 1 P. Adam keeps two "
    "running averages per parameter, exp_avg and exp_avg_sq, each the parameter's size: 2 P, plus a 4-byte step "
    "counter per parameter tensor.",
    mistakes={
        (1, 1): "Adam keeps two tensors per parameter, exp_avg and exp_avg_sq, not one.",
        (0, 2): "backward gives every parameter of this MLP a .grad of the parameter's own size.",
        (1, 3): "Adam's third item per parameter is a 4-byte step counter, not a third copy.",
        (1, 0): "Adam makes its state in the first step() and keeps it between steps.",
        (2, 2): "there is one gradient per parameter, the parameter's size.",
    },
)


def _deep_block(width: int = 128) -> nn.Sequential:
    torch.manual_seed(0)
    return nn.Sequential(nn.Linear(width, 4 * width), nn.ReLU(), nn.Linear(4 * width, width))


def _checkpoint_keeps(use_checkpoint: bool, width: int = 128) -> str:
    """What a forward pass through one block keeps of it, measured: "input", "hidden", "both" or "neither"."""
    from torch.utils.checkpoint import checkpoint

    block = _deep_block(width)
    batch, hidden_bytes, input_bytes = 512, 512 * 4 * width * 4, 512 * width * 4
    with measure_memory() as forward:
        block_input = torch.randn(batch, width)
        output = checkpoint(block, block_input, use_reentrant=False) if use_checkpoint else block(block_input)
        del block_input  # what stays alive now is what the graph keeps
    extra = forward.allocated - output.untyped_storage().nbytes()
    hidden_kept = extra >= hidden_bytes
    input_kept = extra - hidden_kept * hidden_bytes >= input_bytes
    return {(True, True): "both", (True, False): "input", (False, True): "hidden", (False, False): "neither"}[
        (input_kept, hidden_kept)
    ]


prediction(
    "ch6.q_checkpoint",
    lambda: _checkpoint_keeps(use_checkpoint=True),
    why="checkpoint keeps the block's input and drops what the block saves inside, such as its 512-wide hidden "
    "output. During backward it runs the block again from that input to get the saved tensors back.",
    choices=("input", "hidden", "both", "neither"),
    mistakes={
        "both": "keeping both is what the forward pass does without checkpointing; checkpoint gives up the hidden "
        "output.",
        "hidden": "it is the other way round: the hidden output is recomputed, and the input is what it is recomputed "
        "from.",
        "neither": "backward must run the block again, so checkpoint keeps the block's input.",
    },
)


def _autocast_truth() -> str:
    """Whether the chapter's forward pass under bfloat16 autocast leaves fewer bytes than in float32."""
    model = make_mlp()
    inputs, _ = _chapter_batch()
    with measure_memory() as in_float32:
        logits = model(inputs)
    del logits
    with measure_memory() as under_autocast, torch.autocast("cpu", dtype=torch.bfloat16):
        logits = model(inputs)  # noqa: F841
    return "yes" if under_autocast.allocated < in_float32.allocated else "no"


prediction(
    "ch6.q_autocast",
    _autocast_truth,
    why="autocast runs the matrix multiplications in bfloat16, so it makes bfloat16 copies of the weights and of "
    "the input, and autograd keeps the copies backward needs. For a batch of 512 these copies outweigh the halved "
    "activations.",
    choices=("yes", "no"),
    mistakes={"yes": "the activations halve, but autocast adds bfloat16 copies of the weights and the input."},
)
