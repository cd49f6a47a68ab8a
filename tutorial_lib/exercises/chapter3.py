"""Chapter 3 exercises: counting backward nodes, the chain rule, freezing layers, inference without a graph, a
running loss that keeps no graph.

Every checker runs torch itself: the program of an exercise is built for real and its graph counted, the
learner's derivative is compared with autograd at several points, and the learner's functions are run on
fresh models whose flags, gradients, buffers and outputs are then inspected.
"""

from __future__ import annotations

import copy
import itertools
import math
import numbers

import torch
from torch import nn

from . import correct, exercise, is_stub, not_attempted, prediction, wrong

# --- ch3.count_nodes --------------------------------------------------------------------------------------


def count_nodes_program() -> torch.Tensor:
    """The program of the exercise, run for real: returns ``y``."""
    w = torch.randn(4, 3, requires_grad=True)
    b = torch.randn(4, requires_grad=True)
    x = torch.randn(3)  # does not require grad
    scaled = x * 2
    h = w @ scaled + b
    y = (h.relu() * h).sum()
    return y


def backward_node_names(t: torch.Tensor) -> list[str]:
    """The names of the backward nodes reachable from ``t.grad_fn`` (each once), leaves excluded."""
    names, seen, stack = [], set(), [t.grad_fn] if t.grad_fn is not None else []
    while stack:
        fn = stack.pop()
        if id(fn) in seen:
            continue
        seen.add(id(fn))
        if not fn.name().endswith("AccumulateGrad"):
            names.append(fn.name())
        stack.extend(next_fn for next_fn, _ in fn.next_functions if next_fn is not None)
    return names


@exercise("ch3.count_nodes")
def check_count_nodes(answer):
    if isinstance(answer, bool) or not isinstance(answer, numbers.Integral):  # numpy integers count too
        return wrong(
            "the answer should be a whole number, e.g. answer = 3.",
            "count the backward nodes (names ending in Backward0).",
        )
    with torch.random.fork_rng(devices=[]):
        y = count_nodes_program()
    names = backward_node_names(y)
    truth, leaves = len(names), 2  # w and b: one AccumulateGrad each
    answer = int(answer)
    if answer == truth:
        return correct(
            f"{truth} backward nodes: {', '.join(sorted(names))}. x * 2 recorded nothing, and h used twice is still "
            "one node."
        )
    if answer == truth + leaves:
        return wrong(
            f"{answer} is the number of backward nodes plus the two AccumulateGrad nodes of the leaves w and b.",
            "count only the nodes that differentiate an operation (…Backward0), not the leaves' AccumulateGrad.",
        )
    if answer > truth:
        return wrong(
            "too many.",
            "check two things: does x * 2 record anything when x does not require grad? "
            "Does using h twice give it a second node?",
        )
    return wrong(
        "too few.",
        "here each operation whose result requires grad records one node: @, +, relu, * and sum.",
    )


# --- ch3.chain_rule ---------------------------------------------------------------------------------------


#: points (x1, x2) where the checker compares with autograd; all have x1 * x2 > 0
CHAIN_RULE_POINTS = ((2.0, 3.0), (0.5, 1.2), (1.5, 4.0), (3.0, 0.7), (0.8, 2.5))


def autograd_partials(x1: float, x2: float) -> tuple[float, float]:
    """dz/dx1 and dz/dx2 of z = log(x1 * x2) * sin(x2), computed by autograd in float64."""
    a = torch.tensor(x1, dtype=torch.float64, requires_grad=True)
    b = torch.tensor(x2, dtype=torch.float64, requires_grad=True)
    z = torch.log(a * b) * torch.sin(b)
    grad_x1, grad_x2 = torch.autograd.grad(z, (a, b))
    return grad_x1.item(), grad_x2.item()


def _as_float(value):
    if isinstance(value, torch.Tensor):
        return value.detach().double().item() if value.numel() == 1 else None
    if type(value).__module__ == "numpy" and getattr(value, "size", None) == 1:  # np.float32(…), np.array([…])
        value = value.item()
    if isinstance(value, bool) or not isinstance(value, numbers.Real):
        return None
    return float(value)


def _close(a: float, b: float) -> bool:
    return math.isclose(a, b, rel_tol=1e-5, abs_tol=1e-6)


def _first_difference(results: list[float]) -> str:
    """Where the answer first differs from autograd, and the points where it matched (a formula that is right at
    (2, 3) only must not be shown two equal numbers under "Not yet")."""
    truths = [autograd_partials(x1, x2)[1] for x1, x2 in CHAIN_RULE_POINTS]
    matched = [point for point, got, truth in zip(CHAIN_RULE_POINTS, results, truths) if _close(got, truth)]
    index = next(i for i, (got, truth) in enumerate(zip(results, truths)) if not _close(got, truth))
    (x1, x2), got, truth = CHAIN_RULE_POINTS[index], results[index], truths[index]
    message = f"at x1={x1}, x2={x2} your function gives {got:.6f}; autograd gives {truth:.6f}."
    if matched:
        where = ", ".join(f"({a:g}, {b:g})" for a, b in matched)
        message += (
            f" It matched autograd only at {where}, {len(matched)} of the {len(CHAIN_RULE_POINTS)} points tried: "
            "a formula must hold at every point."
        )
    return message


@exercise("ch3.chain_rule", function="def dz_dx2(x1, x2): ...")
def check_chain_rule(fn):
    results = []
    for x1, x2 in CHAIN_RULE_POINTS:
        value = fn(x1, x2)
        if is_stub(value):
            return not_attempted()
        number = _as_float(value)
        if number is None:
            return wrong(f"dz_dx2({x1}, {x2}) returned {type(value).__name__}, not a number.", "return one float.")
        results.append(number)
    if all(_close(got, autograd_partials(x1, x2)[1]) for got, (x1, x2) in zip(results, CHAIN_RULE_POINTS)):
        return correct(
            f"your formula agrees with autograd at all {len(CHAIN_RULE_POINTS)} points tried "
            f"(at x1=2, x2=3: {results[0]:.6f}): the two paths through x2 add up."
        )
    candidates = {
        "sin path": lambda x1, x2: math.log(x1 * x2) * math.cos(x2),
        "log path": lambda x1, x2: math.sin(x2) / x2,
        "dz/dx1": lambda x1, x2: math.sin(x2) / x1,
    }
    matches = {
        name
        for name, f in candidates.items()
        if all(_close(got, f(x1, x2)) for got, (x1, x2) in zip(results, CHAIN_RULE_POINTS))
    }
    message = _first_difference(results)
    if "sin path" in matches:
        return wrong(
            message + " You kept only the path through sin(x2).",
            "x2 also reaches z through a = x1 * x2 and log(a): add that path's product of local derivatives.",
        )
    if "log path" in matches:
        return wrong(
            message + " You kept only the path through log(x1 * x2).",
            "x2 also reaches z through sin(x2): add log(x1 * x2) * cos(x2).",
        )
    if "dz/dx1" in matches:
        return wrong(message + " That is dz/dx1.", "differentiate with respect to x2: it appears in two places.")
    return wrong(
        message,
        "multiply the local derivatives along each path from z to x2 (two paths) and add the paths. "
        "d log(u)/du = 1/u, d sin(u)/du = cos(u).",
    )


# --- ch3.freeze -------------------------------------------------------------------------------------------


class _BackboneAndHead(nn.Module):
    def __init__(self):
        super().__init__()
        self.backbone = nn.Sequential(nn.Linear(4, 8), nn.ReLU(), nn.Linear(8, 8), nn.ReLU())
        self.head = nn.Linear(8, 3)

    def forward(self, x):
        return self.head(self.backbone(x))


class _BlocksAndHeads(nn.Module):
    """Containers inside containers: a ModuleList of Sequential blocks, then a ModuleDict of two Linear layers."""

    def __init__(self):
        super().__init__()
        self.blocks = nn.ModuleList(
            [nn.Sequential(nn.Linear(4, 8), nn.ReLU()), nn.Sequential(nn.Linear(8, 8), nn.ReLU())]
        )
        self.head = nn.ModuleDict({"hidden": nn.Linear(8, 8), "out": nn.Linear(8, 3)})

    def forward(self, x):
        for block in self.blocks:
            x = block(x)
        return self.head["out"](self.head["hidden"](x).relu())


class _ScaledTanh(nn.Module):
    """A layer of the learner's own kind: one parameter that is not called ``weight``, and a child without
    parameters."""

    def __init__(self, size):
        super().__init__()
        self.gain = nn.Parameter(torch.ones(size))
        self.activation = nn.Tanh()

    def forward(self, x):
        return self.activation(x) * self.gain


def _freeze_models():
    """(description, model) pairs; built inside the checker on a forked RNG."""
    all_frozen = nn.Sequential(nn.Linear(4, 6), nn.Tanh(), nn.Linear(6, 2))
    all_frozen.requires_grad_(False)
    return [
        (
            "a Sequential of three Linear layers",
            nn.Sequential(nn.Linear(4, 8), nn.ReLU(), nn.Linear(8, 8), nn.ReLU(), nn.Linear(8, 2)),
        ),
        (
            "a Sequential that ends in a ReLU",
            nn.Sequential(nn.Linear(4, 8), nn.BatchNorm1d(8), nn.ReLU(), nn.Linear(8, 3), nn.ReLU()),
        ),
        ("a module with .backbone and .head", _BackboneAndHead()),
        (
            "a model whose last Linear has no bias",
            nn.Sequential(nn.Linear(4, 8), nn.ReLU(), nn.Linear(8, 2, bias=False)),
        ),
        ("a model that arrives with every parameter frozen", all_frozen),
        (
            "a Sequential of Sequentials (the last one holds two Linear layers)",
            nn.Sequential(
                nn.Sequential(nn.Linear(4, 8), nn.ReLU()), nn.Sequential(nn.Linear(8, 8), nn.ReLU(), nn.Linear(8, 2))
            ),
        ),
        ("a model of a ModuleList of blocks and a ModuleDict head {'hidden', 'out'}", _BlocksAndHeads()),
        (
            "a model whose last layer is a LayerNorm, not a Linear",
            nn.Sequential(nn.Linear(4, 8), nn.ReLU(), nn.Linear(8, 3), nn.LayerNorm(3)),
        ),
        (
            "a model whose last layer is a custom module (its one parameter is called gain, and it has a Tanh child)",
            nn.Sequential(nn.Linear(4, 8), nn.ReLU(), nn.Linear(8, 3), _ScaledTanh(3)),
        ),
    ]


def _inside_last_container(left_trainable, expected) -> bool:
    """Whether the parameters left trainable all sit in the same top-level child as the last layer (``head.*``)."""
    top = {name.split(".")[0] for name in expected}
    return len(top) == 1 and all(name.split(".")[0] in top and name.count(".") > 1 for name in left_trainable)


def last_layer(model: nn.Module) -> nn.Module:
    """The last submodule (in ``model.modules()`` order) that has parameters of its own."""
    return [m for m in model.modules() if any(True for _ in m.parameters(recurse=False))][-1]


@exercise("ch3.freeze", function="def freeze_all_but_last(model): ...")
def check_freeze(fn):
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(0)
        models = _freeze_models()
        inputs = torch.randn(5, 4)
    for description, model in models:
        names = {id(p): name for name, p in model.named_parameters()}
        last_ids = {id(p) for p in last_layer(model).parameters()}
        before = {name: value.clone() for name, value in model.state_dict().items()}
        returned = fn(model)
        if is_stub(returned):
            return not_attempted()
        if isinstance(returned, torch.Tensor):  # never list() it: an expanded tensor can have 10**9 elements
            kind = "an nn.Parameter" if isinstance(returned, nn.Parameter) else "a tensor"
            return wrong(
                f"for {description} your function returned {kind} of shape {tuple(returned.shape)}, not a list of "
                "parameters.",
                "return a list of the parameters that stay trainable: [p for p in model.parameters() if "
                "p.requires_grad].",
            )
        try:
            # at most one item more than the model has parameters: enough to tell, however long the iterable is
            returned = list(itertools.islice(iter(returned), len(names) + 1))
        except TypeError:
            return wrong(
                f"for {description} your function returned {type(returned).__name__}.",
                "return a list of the parameters that stay trainable.",
            )
        for name, value in model.state_dict().items():
            if name not in before or not torch.equal(value, before[name]):
                return wrong(
                    f"for {description} the model's values changed ({name}).",
                    "only flip requires_grad; do not replace or re-create layers.",
                )
        trainable = {names[id(p)] for p in model.parameters() if p.requires_grad}
        expected = {names[i] for i in last_ids}
        if trainable != expected:
            frozen_too_much = sorted(expected - trainable)
            left_trainable = sorted(trainable - expected)
            if frozen_too_much and not trainable:
                hint = "the last layer must stay trainable; if the model arrived frozen, set requires_grad=True on it."
                if description.endswith("ends in a ReLU"):
                    hint = (
                        "the last module here is a ReLU, which has no parameters: "
                        "look for the last module that has parameters of its own."
                    )
                return wrong(f"for {description} nothing is trainable afterwards.", hint)
            if frozen_too_much:
                hint = "the last layer (weight and bias) must stay trainable."
                if left_trainable:
                    hint = (
                        f"you kept {', '.join(left_trainable)} trainable instead. The last layer is the last module in "
                        "model.modules() with parameters of its own"
                    )
                    if "LayerNorm" in description:
                        hint += ", whatever its type: a LayerNorm counts, not only a Linear."
                    elif "custom" in description:
                        hint += (
                            ", whatever its type, the names of its parameters or whether it has children: test "
                            "m.parameters(recurse=False), not isinstance, a `weight` attribute or childlessness."
                        )
                    else:
                        hint += "."
                return wrong(f"for {description}: {', '.join(frozen_too_much)} ended up frozen.", hint)
            if _inside_last_container(left_trainable, expected):
                return wrong(
                    f"for {description} these are still trainable: {', '.join(left_trainable)}; the last layer is only "
                    f"{', '.join(sorted(expected))}.",
                    "a container (Sequential, ModuleList, ModuleDict) is not a layer: model.children() and the first "
                    "part "
                    "of a parameter's name stop at the outer container. Search model.modules(), which goes all the way "
                    "down, for the last module with parameters of its own (parameters(recurse=False)).",
                )
            return wrong(
                f"for {description} these are still trainable: {', '.join(left_trainable)}.",
                "set requires_grad=False on every parameter outside the last layer (p.requires_grad_(False)).",
            )
        if {id(p) for p in returned} != last_ids or len(returned) != len(last_ids):
            return wrong(
                f"the flags are right, but for {description} you returned {len(returned)} parameters instead of the "
                f"{len(last_ids)} trainable ones.",
                "return [p for p in model.parameters() if p.requires_grad]: that is what the optimizer should get.",
            )
        model.train()
        model(inputs).sum().backward()
        with_grad = {names[id(p)] for p in model.parameters() if p.grad is not None}
        if with_grad != expected:  # cannot happen when the flags are right; kept as a check against torch
            return wrong(
                f"for {description} backward() gave .grad to {sorted(with_grad)}.",
                "only the last layer should receive gradients.",
            )
    return correct(
        f"on all {len(models)} models only the last layer with parameters kept requires_grad=True, only it got "
        ".grad after backward(), and the values were untouched."
    )


# --- ch3.inference ----------------------------------------------------------------------------------------


def _inference_model() -> nn.Module:
    model = nn.Sequential(nn.Linear(6, 16), nn.BatchNorm1d(16), nn.ReLU(), nn.Dropout(0.5), nn.Linear(16, 3))
    with torch.no_grad():  # give BatchNorm running statistics that differ from the batch's own
        for _ in range(3):
            model(torch.randn(32, 6) * 2 + 1)
    model[0].requires_grad_(False)  # arrives partly frozen: restoring every flag to True is not "as found"
    return model


def _buffers(model: nn.Module) -> dict[str, torch.Tensor]:
    return {name: value.clone() for name, value in model.named_buffers()}


class _Recording:
    """What happened to autograd while the learner's function ran."""

    def __init__(self):
        self.saved_count = 0
        self.saved_bytes = 0
        self.recorded_outputs = 0  # module outputs that came out with a grad_fn
        self.model_outputs: list[torch.Tensor] = []  # every output of the whole model, kept alive until judged
        self.grad_mode_after = True
        self.inference_mode_after = False


def _run_watched(fn, model, x) -> tuple[object, _Recording]:
    """Run ``fn(model, x)`` with grad mode on, counting every tensor autograd saves for backward.

    A saved tensor, or a layer output with a ``grad_fn``, is the sign that a graph was recorded, even when the
    learner detaches the result afterwards.
    Grad mode is read again when ``fn`` returns, then ``enable_grad`` puts back whatever it was before the check.
    """
    recording = _Recording()

    def pack(tensor):
        recording.saved_count += 1
        recording.saved_bytes += tensor.numel() * tensor.element_size()
        return tensor

    def note_output(module, args, output):
        # a second witness, for a learner who installs saved-tensor hooks of their own (which replace ours)
        if isinstance(output, torch.Tensor) and output.grad_fn is not None:
            recording.recorded_outputs += 1
        if module is model and isinstance(output, torch.Tensor):
            recording.model_outputs.append(output)  # kept alive, so that no later tensor reuses its memory

    handles = [module.register_forward_hook(note_output) for module in model.modules()]
    try:
        with torch.enable_grad():
            with torch.autograd.graph.saved_tensors_hooks(pack, lambda tensor: tensor):
                out = fn(model, x)
            recording.grad_mode_after = torch.is_grad_enabled()
            recording.inference_mode_after = torch.is_inference_mode_enabled()
    finally:
        for handle in handles:
            handle.remove()
    return out, recording


def _same_memory(a: torch.Tensor, b: torch.Tensor) -> bool:
    return a.untyped_storage().data_ptr() == b.untyped_storage().data_ptr()


def _recorded_a_graph(out: torch.Tensor, recording: _Recording):
    """The verdict on a predict that recorded a graph although its output has none: say which call recorded it."""
    what = (
        f"a graph was recorded while predict ran: {recording.recorded_outputs} module outputs got a grad_fn and "
        f"autograd saved {recording.saved_count} tensors ({recording.saved_bytes:,} bytes) for backward."
    )
    recorded_calls = [o for o in recording.model_outputs if o.grad_fn is not None]
    if any(_same_memory(o, out) for o in recorded_calls):
        return wrong(
            what + " Your output has no grad_fn only because it was cut off afterwards; the recording, its time and "
            "its memory were spent all the same.",
            "`.detach()` (or `.data`) after the forward pass does not stop the recording: run the forward inside "
            "`with torch.no_grad():` (or torch.inference_mode()).",
        )
    if recorded_calls and any(o.grad_fn is None and _same_memory(o, out) for o in recording.model_outputs):
        return wrong(
            what + f" The output you returned comes from a call that recorded nothing, but {len(recorded_calls)} "
            f"other call{'s' if len(recorded_calls) > 1 else ''} of the model ran with recording on (a warm-up call, "
            "a call made to read a shape).",
            "run every call of the model inside `with torch.no_grad():` (or torch.inference_mode()), or drop the "
            "extra call.",
        )
    return wrong(
        what + " Your output has no grad_fn, but the recording, its time and its memory were spent all the same.",
        "run every forward pass inside `with torch.no_grad():` (or torch.inference_mode()): cutting an output off "
        "afterwards (`.detach()`, `.data`) does not undo its recording.",
    )


@exercise("ch3.inference", function="def predict(model, x): ...")
def check_inference(fn):
    for start_in_training in (True, False):
        with torch.random.fork_rng(devices=[]):
            torch.manual_seed(1)
            model = _inference_model()
            x = torch.randn(8, 6)
            model.train(start_in_training)
            reference_model = copy.deepcopy(model).eval()
            with torch.no_grad():
                reference = reference_model(x)
            buffers = _buffers(model)
            modes = [m.training for m in model.modules()]
            flags = [p.requires_grad for p in model.parameters()]
            out, recording = _run_watched(fn, model, x)
        mode = "training" if start_in_training else "eval"
        if is_stub(out):
            return not_attempted()
        if not recording.grad_mode_after or recording.inference_mode_after:
            return wrong(
                "after predict returned, gradient recording was still switched off (torch.is_grad_enabled() was "
                "False), so every later forward pass in your notebook would record nothing. The checker switched it "
                "back on.",
                "use a block that restores the mode by itself: `with torch.no_grad():` (or "
                "`with torch.set_grad_enabled(False):`, or the @torch.no_grad() decorator) instead of calling "
                "torch.set_grad_enabled(False) alone.",
            )
        if not isinstance(out, torch.Tensor):
            return wrong(f"predict returned {type(out).__name__}, not a tensor.", "return the model's output.")
        if out.requires_grad or out.grad_fn is not None:
            return wrong(
                f"the output still belongs to a graph (requires_grad={out.requires_grad}, grad_fn="
                f"{type(out.grad_fn).__name__ if out.grad_fn is not None else None}).",
                "model.eval() does not stop graph building: run the forward inside `with torch.no_grad():` "
                "(or torch.inference_mode()).",
            )
        if [p.requires_grad for p in model.parameters()] != flags:
            return wrong(
                "the model's parameters changed their requires_grad flags.",
                "put every parameter's requires_grad back as it was, or better leave them alone: `with "
                "torch.no_grad():` stops "
                "the recording without touching them.",
            )
        if recording.saved_count or recording.recorded_outputs:
            return _recorded_a_graph(out, recording)
        changed = [name for name, value in model.named_buffers() if not torch.equal(value, buffers[name])]
        if changed:
            return wrong(
                f"the forward pass changed BatchNorm's running statistics ({', '.join(changed)}).",
                "torch.no_grad() does not change how layers behave: BatchNorm in training mode still updates its "
                "statistics. Switch to evaluation behaviour with model.eval().",
            )
        if out.shape != reference.shape or not torch.allclose(out, reference, atol=1e-6):
            return wrong(
                f"with a model in {mode} mode the output differs from the model's evaluation-mode output.",
                "dropout and BatchNorm behave differently in training mode: call model.eval() before the forward pass.",
            )
        if [m.training for m in model.modules()] != modes:
            return wrong(
                f"the model arrived in {mode} mode and left in {'training' if model.training else 'eval'} mode.",
                "remember was_training = model.training before, and restore it with model.train(was_training) "
                "afterwards (a model whose submodules are in different modes needs each module's flag put back).",
            )
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(1)
        model, x = _inference_model(), torch.randn(8, 6)
    with torch.no_grad():  # a caller that has recording off: predict must leave it off
        fn(model, x)
        switched_on = torch.is_grad_enabled()
    if switched_on:
        return wrong(
            "called inside `with torch.no_grad():`, predict switched gradient recording on for the code after it "
            "(torch.is_grad_enabled() was True when it returned).",
            "leave the mode as you found it: a `with torch.no_grad():` block puts back whatever mode was there, where "
            "torch.set_grad_enabled(True) afterwards forces it on.",
        )
    return correct(
        "evaluation-mode output, no graph recorded (autograd saved nothing for backward during the call), grad mode "
        "as it was afterwards (tried with recording on and off), BatchNorm statistics untouched, and the model left "
        "in the mode it arrived in (tried from both training and eval mode)."
    )


# --- ch3.average_loss -------------------------------------------------------------------------------------


def _average_loss_setup(batch_count: int):
    """A small model and ``batch_count`` equal-sized (inputs, targets) batches; the same first batches every time."""
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(3)
        model = nn.Sequential(nn.Linear(32, 512), nn.ReLU(), nn.Linear(512, 1))
        batches = [(torch.randn(64, 32), torch.randn(64, 1)) for _ in range(batch_count)]
    return model, batches


#: bytes of the one activation each batch's graph saves that nothing else holds: ReLU's 64 x 512 float32 result
_ACTIVATION_BYTES_PER_BATCH = 64 * 512 * 4


def reference_average_loss(model: nn.Module, batches) -> float:
    """The mean over batches of ``mse_loss(model(inputs), targets)``, computed without a graph."""
    with torch.no_grad():
        return sum(nn.functional.mse_loss(model(inputs), targets).item() for inputs, targets in batches) / len(batches)


@exercise("ch3.average_loss", function="def average_loss(model, batches): ...")
def check_average_loss(fn):
    from ..facts.memory import measure_memory  # imported here: the other chapter 3 checkers do not need it

    peaks, graphs_recorded = {}, {}
    for batch_count in (2, 8):
        model, batches = _average_loss_setup(batch_count)
        before = {name: value.clone() for name, value in model.state_dict().items()}
        gradients_computed = []  # a tensor hook on a parameter runs whenever a gradient for it is computed
        handles = [p.register_hook(lambda grad: gradients_computed.append(grad.shape)) for p in model.parameters()]
        recorded = []  # outputs of the model's layers that came out with a grad_fn: a graph was recorded
        handles += [
            module.register_forward_hook(
                lambda module, args, output: (
                    recorded.append(1) if isinstance(output, torch.Tensor) and output.grad_fn is not None else None
                )
            )
            for module in model.modules()
        ]
        try:
            with measure_memory() as memory:
                result = fn(model, batches)
        finally:
            for handle in handles:
                handle.remove()
        if is_stub(result):
            return not_attempted()
        if memory.unseen:  # a thread the profiler does not record: the peaks compared below would not be the truth
            return wrong(
                f"with {batch_count} batches your function did work that measure_memory cannot count: "
                f"{memory.unseen[0]}.",
                "compute the losses in the calling thread, so that the memory they keep can be measured.",
            )
        peaks[batch_count] = memory.peak
        if isinstance(result, torch.Tensor) and result.grad_fn is not None:
            return wrong(
                f"with {batch_count} batches your function returned a tensor that still has a grad_fn "
                f"({type(result.grad_fn).__name__}): it holds the graph of every batch, and all the activations "
                "those graphs saved.",
                "add up plain numbers: total += loss.item() (or loss.detach()), and return a Python float.",
            )
        if isinstance(result, bool) or not isinstance(result, (float, int)):
            kind = "a tensor" if isinstance(result, torch.Tensor) else type(result).__name__
            return wrong(
                f"your function returned {kind}, not a Python float.",
                "return a float: call .item() on a one-element tensor.",
            )
        if gradients_computed or any(p.grad is not None for p in model.parameters()):
            if any(p.grad is not None for p in model.parameters()):
                where = ", and left them in .grad"
            else:
                where = ", even if .grad was cleared afterwards"
            return wrong(
                f"your function computed gradients for the model's parameters ({len(gradients_computed)} of them"
                f"{where}).",
                "measuring the loss needs no backward(): backward() does free each graph, but it also computes and "
                "stores gradients. Keep numbers instead (loss.item()), or use torch.no_grad().",
            )
        if any(not torch.equal(value, before[name]) for name, value in model.state_dict().items()):
            return wrong("your function changed the model's values.", "only compute the losses: no optimizer step.")
        expected = reference_average_loss(model, batches)
        if not math.isclose(float(result), expected, rel_tol=1e-5, abs_tol=1e-7):
            total = expected * batch_count
            if math.isclose(float(result), total, rel_tol=1e-5):
                return wrong(
                    f"with {batch_count} batches you returned {result:.6f}, the sum of the losses.",
                    "divide by the number of batches.",
                )
            return wrong(
                f"with {batch_count} batches you returned {float(result):.6f}; the mean loss is {expected:.6f}.",
                "for each (inputs, targets) in batches: nn.functional.mse_loss(model(inputs), targets); average those "
                "numbers.",
            )
        graphs_recorded[batch_count] = bool(recorded)
    growth = peaks[8] - peaks[2]
    if growth > 2 * _ACTIVATION_BYTES_PER_BATCH and not any(graphs_recorded.values()):
        return wrong(
            f"the right number, but memory grows with the number of batches: the peak was {peaks[2]:,} bytes for 2 "
            f"batches and {peaks[8]:,} bytes for 8, about {growth // 6:,} more per batch. No graph was recorded, so "
            "it is not a graph that grows: your function held something of every batch at once (all the batches "
            "concatenated into one, or every batch's output kept).",
            "run the model on one batch at a time and keep only a number per batch (loss.item()), so that each "
            "batch's tensors can go before the next batch runs.",
        )
    if growth > 2 * _ACTIVATION_BYTES_PER_BATCH:
        return wrong(
            f"the right number, but memory grows with the number of batches: the peak was {peaks[2]:,} bytes for 2 "
            f"batches and {peaks[8]:,} bytes for 8, about {growth // 6:,} more per batch: something of every batch "
            "stayed alive until the end (with a running total or a list of loss tensors, every batch's graph and the "
            "activations it saved).",
            "a loss tensor that you keep (in a running total, in a list) keeps its whole graph: keep loss.item() "
            "(or loss.detach()) instead, or compute the losses under torch.no_grad().",
        )
    return correct(
        f"the right mean loss, a plain float, and a peak that does not grow with the batches ({peaks[2]:,} bytes "
        f"for 2 batches, {peaks[8]:,} for 8): no batch's graph outlived its turn."
    )


# --- quick predictions ------------------------------------------------------------------------------------


def seed_graph() -> tuple[torch.Tensor, torch.Tensor, torch.Tensor, torch.Tensor]:
    """The chapter's example at (2, 3): ``x1, x2, a = x1 * x2, z = log(a) * sin(x2)``."""
    x1 = torch.tensor(2.0, requires_grad=True)
    x2 = torch.tensor(3.0, requires_grad=True)
    a = x1 * x2
    z = torch.log(a) * torch.sin(x2)
    return x1, x2, a, z


prediction(
    "ch3.q_nodes",
    lambda: len(backward_node_names(seed_graph()[-1])),
    why="each of the four operations here recorded one backward node: x1 * x2, log, sin and the last "
    "multiplication. Tensors are not nodes, and the leaves' AccumulateGrad nodes are not counted here.",
    mistakes={
        6: "that counts the AccumulateGrad nodes of the leaves x1 and x2 as well.",
        3: "x1 * x2 is an operation too: it records a MulBackward0, like the last multiplication.",
        7: "that counts tensors as nodes (a, y1 and y2, or the output and the two leaves): only the four "
        "operations recorded a backward node.",
    },
)


def saved_kind(result: torch.Tensor) -> str:
    """What ``result.grad_fn`` saved for backward: "result", "input" or "nothing" (read from its _saved_ fields)."""
    node = result.grad_fn
    saved = {name for name in dir(node) if name.startswith("_saved_") and isinstance(getattr(node, name), torch.Tensor)}
    if "_saved_result" in saved:
        return "result"
    return "input" if "_saved_self" in saved else "nothing"


def _saved_truth() -> tuple[str, ...]:
    x = torch.randn(3, requires_grad=True)
    return tuple(saved_kind(result) for result in (x.exp(), x.sin(), x + 1, x.relu()))


prediction(
    "ch3.q_saved",
    _saved_truth,
    why="a node saves only what its derivative formula reads. The derivative of exp(x) is exp(x) itself, and relu's "
    "is 1 where its result is positive: both read the result. sin's derivative cos(x) needs the input. The "
    "derivative of x + 1 is 1 whatever x is: nothing to save.",
    choices=("input", "result", "nothing"),
    mistakes={
        ("input", "input", "input", "input"): "a node does not keep its input by default: it keeps what its "
        "derivative formula reads, and x + 1's reads no tensor.",
        ("input", "input", "nothing", "input"): "exp and relu keep their result: exp(x) is its own derivative, and "
        "relu's derivative can be read off where the result is positive.",
        ("result", "result", "nothing", "result"): "sin keeps its input: cos(x) cannot be computed from sin(x) alone.",
        ("result", "input", "input", "result"): "x + 1 has derivative 1 whatever x is: AddBackward0 keeps no tensor.",
    },
)


def _grad_truth() -> tuple[str, ...]:
    import warnings

    x1, x2, a, z = seed_graph()
    z.backward()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # reading the .grad of a non-leaf warns
        return tuple("none" if t.grad is None else "tensor" for t in (x1, x2, a, z))


prediction(
    "ch3.q_grad",
    _grad_truth,
    why="z.backward() fills the .grad of the leaves that require grad: x1 and x2. The gradients of a and z pass "
    "through their nodes and are dropped, unless you call retain_grad() on them before backward().",
    choices=("tensor", "none"),
    mistakes={
        ("tensor", "tensor", "tensor", "tensor"): "a and z are not leaves: their gradients pass through the graph "
        "and are not kept.",
        ("tensor", "tensor", "none", "tensor"): "z is not a leaf either: its gradient (1) is not kept.",
        ("tensor", "none", "none", "none"): "x2 is a leaf that requires grad: the gradients of its two paths add up "
        "in x2.grad.",
    },
)


def _left_by_forward_pass() -> tuple[str, ...]:
    """For three of section 5's runs (train mode with recording on, eval mode with recording on, eval mode under
    no_grad), whether the forward pass leaves saved activations or only its output behind.

    Measured on a small model with the same kinds of layer as the chapter's (Linear, BatchNorm, ReLU, Dropout): what
    is left beyond the output is what the graph saved, whatever the sizes.
    """
    from ..facts.memory import measure_memory  # imported here: only this prediction measures

    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(0)
        model = nn.Sequential(
            nn.Linear(16, 64), nn.BatchNorm1d(64), nn.ReLU(), nn.Dropout(0.5), nn.Linear(64, 64), nn.ReLU()
        )
        inputs = torch.randn(32, 16)
    answers = []
    for training, context in ((True, torch.enable_grad), (False, torch.enable_grad), (False, torch.no_grad)):
        model.train(training)
        with measure_memory() as memory:
            with context():
                out = model(inputs)
        output_bytes = out.untyped_storage().nbytes()
        del out
        answers.append("activations" if memory.allocated > output_bytes else "output")
    return tuple(answers)


prediction(
    "ch3.q_bytes_left",
    _left_by_forward_pass,
    why="model.eval() changes how dropout and BatchNorm behave, not whether autograd records. With recording on, "
    "both modes keep the activations saved for backward, MiB of them. no_grad records no graph, so only the 20 KiB "
    "output is left.",
    choices=("activations", "output"),
    mistakes={
        ("activations", "output", "output"): "eval() does not switch recording off: in eval mode the forward pass "
        "still saves activations for backward.",
        ("activations", "activations", "activations"): "no_grad stops the recording: nothing is saved for backward, "
        "in eval mode as in training mode.",
        ("output", "output", "output"): "with recording on, the output's graph still holds what its nodes saved for "
        "backward: the activations stay after the forward pass.",
    },
)
