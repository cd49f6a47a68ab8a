"""Chapter 5 exercises: which in-place edits break backward(), a residual block that works, the stale node,
a custom linear Function with an optional bias, the line that changed a saved tensor; and the chapter's quick
predictions (version numbers, what each op saves, what the error message names, where ReLU(inplace=True) breaks).

Every checker runs torch itself: predictions are compared with what real ``backward()`` calls do on the
programs below, the learner's block is run forward and backward and its gradients compared with ones torch
computes for an out-of-place reference, the culprit is looked up with ``inplace_hazards``, the learner's
Function is compared with ``nn.functional.linear`` and run through ``torch.autograd.gradcheck``, and the
changing line is the one ``watch_inplace``'s explanation names when the training loop runs under it.

The programs are kept here as source text so that the notebook shows exactly the code that is checked
(``tests/test_exercises_chapter5.py`` checks that the notebook contains each one verbatim).
"""

from __future__ import annotations

import inspect
import linecache
import re
import traceback

import torch

from ..common.text import strip_hint
from ..facts.graph import autograd_graph, inplace_hazards
from . import correct, exercise, is_stub_function, not_attempted, prediction, whole_number, wrong

INPLACE_ERROR = "modified by an inplace operation"


def run_program(source: str) -> dict:
    """Run one exercise program (seeded) and return its variables; the program defines ``loss``."""
    namespace = {"torch": torch, "nn": torch.nn}
    torch.manual_seed(0)
    exec(source, namespace)  # noqa: S102 - our own fixed programs
    return namespace


def backward_raises(source: str) -> bool:
    """Whether ``loss.backward()`` at the end of the program raises autograd's in-place error."""
    loss = run_program(source)["loss"]
    try:
        loss.backward()
    except RuntimeError as error:
        if INPLACE_ERROR in str(error):
            return True
        raise
    return False


# --- ch5.predict_error -----------------------------------------------------------------------------------

PREDICT_PROGRAMS = {
    "A": """\
a = torch.randn(3, requires_grad=True)
h = a * 2
y = h.exp()
h += 1
loss = y.sum()""",
    "B": """\
a = torch.randn(3, requires_grad=True)
y = a.exp()
y += 1
loss = y.sum()""",
    "C": """\
a = torch.randn(3, requires_grad=True)
w = torch.randn(3)
h = a + 1
y = h * w
h.zero_()
loss = y.sum()""",
    "D": """\
a = torch.randn(3, requires_grad=True)
w = torch.randn(3, requires_grad=True)
h = a + 1
y = h * w
h.zero_()
loss = y.sum()""",
    "E": """\
a = torch.randn(3, requires_grad=True)
h = torch.sigmoid(a)
h.relu_()
loss = h.sum()""",
    "F": """\
a = torch.randn(2, 3, requires_grad=True)
h = a.tanh()
row = h[0]
row.mul_(2)
loss = h.sum()""",
    "G": """\
a = torch.randn(3, requires_grad=True)
x = a.clone()
x[0] = 0.0
loss = (x ** 2).sum()""",
    "H": """\
a = torch.randn(3, requires_grad=True)
h = a.sin()
h += 1
loss = (h * h).sum()""",
}

# Why each program does or does not raise: shown for the first program the learner got wrong.
_PREDICT_HINTS = {
    "A": "exp saves its output y, not its input h; and h = a * 2 saved only the number 2. Nothing saved h.",
    "B": "exp saves its output (the derivative of e^u is e^u). y += 1 changes exactly that saved tensor.",
    "C": "mul saves each operand for the *other* one's gradient. w does not require grad, so h was never saved.",
    "D": "w requires grad, and d(h * w)/dw = h: mul saved h, which zero_() then changed.",
    "E": "sigmoid saves its output. relu_ leaves these positive values unchanged, but it still bumps the version.",
    "F": "row is a view of h and shares its version counter; tanh saved its output h.",
    "G": "the in-place write happens before x is used: x ** 2 saves x at its new version.",
    "H": "sin saves its input a (which is untouched), not its output h; h * h saves h after the += 1.",
}


def predict_error_truth() -> list[bool]:
    """What really happens: True where ``loss.backward()`` raises, program by program."""
    return [backward_raises(source) for source in PREDICT_PROGRAMS.values()]


@exercise("ch5.predict_error")
def check_predict_error(answer):
    letters = list(PREDICT_PROGRAMS)
    count = len(letters)
    if isinstance(answer, dict):
        if set(answer) != set(letters):
            return wrong(
                f"a dict answer needs exactly the keys {letters}.", "or give a list of 8 booleans in order A to H."
            )
        answer = [answer[letter] for letter in letters]
    if not isinstance(answer, (list, tuple)) or len(answer) != count:
        return wrong(
            f"the answer should be a list of {count} booleans, one per program A to {letters[-1]}.",
            "True means 'backward() raises', e.g. answer = [True, False, ...].",
        )
    if not all(isinstance(item, bool) for item in answer):
        return wrong("every item should be True or False.", "True where you expect backward() to raise, else False.")
    truth = predict_error_truth()
    missed = [letter for letter, guess, real in zip(letters, answer, truth) if guess != real]
    if not missed:
        raising = ", ".join(letter for letter, real in zip(letters, truth) if real)
        return correct(f"backward() raises for {raising} and works for the others, exactly as you said.")
    said = []
    for verb, guess in (("raises", True), ("works", False)):
        named = [letter for letter in missed if answer[letters.index(letter)] is guess]
        if named:
            said.append(f"{verb} for {_joined(named)}")
    if len(missed) == 1:
        message = f"{count - 1} of {count} right; program {missed[0]} is the one you got wrong"
    else:
        message = f"{len(missed)} of {count} wrong: programs {_joined(missed)}"
    shown = missed[:3]
    hints = " ".join(f"{letter}: {_PREDICT_HINTS[letter]}" for letter in shown)
    if len(missed) > len(shown):
        hints += f" Check {_joined(missed[len(shown) :])} with tl.inplace_hazards(loss)."
    return wrong(
        f"{message} (you said backward() {' and '.join(said)}).",
        f"for each in-place edit, ask which node saved that tensor, and when. {hints}",
    )


def _joined(items: list[str]) -> str:
    """``['B']`` -> ``'B'``, ``['B', 'E']`` -> ``'B and E'``, ``['A', 'B', 'E']`` -> ``'A, B and E'``."""
    return items[0] if len(items) == 1 else f"{', '.join(items[:-1])} and {items[-1]}"


# --- ch5.fix_residual ------------------------------------------------------------------------------------


def _reference_block(x: torch.Tensor, weight: torch.Tensor, bias: torch.Tensor) -> torch.Tensor:
    """The block written out of place, as torch should differentiate it."""
    t = torch.tanh(x)
    return torch.relu(t + torch.nn.functional.linear(t, weight, bias))


def _residual_hint(stale: list[str], cloned: bool) -> str:
    """Why backward raised, from the nodes whose saved tensor is stale and whether the block has a clone()."""
    tanh_stale = any(node.startswith("Tanh") for node in stale)
    linear_stale = any(not node.startswith("Tanh") for node in stale)
    out_of_place = "Make the sum a new tensor: x = x + linear(x)."
    if cloned and linear_stale and not tanh_stale:
        return (
            "your clone() keeps tanh's output safe, but linear then saved the clone (its input, for the weight's "
            "gradient), and += changed that clone. A clone protects only what was saved before it. " + out_of_place
        )
    if cloned and tanh_stale and not linear_stale:
        return (
            "your clone() keeps linear's input safe, but tanh saved its output, and += changed that tensor. "
            + out_of_place
        )
    if cloned:
        return (
            "your clone() does not stand between the saved tensors and the +=: x += linear(x) still changes the "
            "tensor that tanh saved (its output) and that linear saved (its input). A clone after the write comes "
            "too late. " + out_of_place
        )
    return (
        "x += linear(x) changes the tensor that tanh saved (its output) and that linear saved (its input). "
        + out_of_place
    )


def _residual_case(seed: int, shape: tuple[int, int]):
    torch.manual_seed(seed)
    linear = torch.nn.Linear(shape[1], shape[1])
    x = torch.randn(*shape, requires_grad=True)
    upstream = torch.randn(*shape)  # a gradient that is not all ones, so every value matters
    return linear, x, upstream


@exercise("ch5.fix_residual", function="def fixed_block(x, linear): ...")
def check_fix_residual(fn):
    for seed, shape in ((0, (3, 4)), (1, (5, 6))):
        linear, x, upstream = _residual_case(seed, shape)
        out = fn(x, linear)
        if not isinstance(out, torch.Tensor):
            return wrong(f"your block returned {type(out).__name__}, not a tensor.", "return the block's output.")
        weight = linear.weight.detach().clone().requires_grad_()
        bias = linear.bias.detach().clone().requires_grad_()
        x_ref = x.detach().clone().requires_grad_()
        expected = _reference_block(x_ref, weight, bias)
        if out.shape != expected.shape or not torch.allclose(out.detach(), expected.detach(), atol=1e-6):
            return wrong(
                "the block's output values differ from relu(tanh(x) + linear(tanh(x))).",
                "keep the computation the same; change only how the residual sum is written.",
            )
        if out.grad_fn is None:
            return wrong(
                "the output is not connected to the graph (it has no grad_fn), so no gradient can reach x or the "
                "layer.",
                "do not detach or use .data: write the sum out of place, x = x + linear(x).",
            )
        stale = [hazard.node for hazard in inplace_hazards(out)]  # read before backward frees what it used
        cloned = any(node.name.startswith("Clone") for node in autograd_graph(out).nodes)
        try:
            (out * upstream).sum().backward()
        except RuntimeError as error:
            return wrong(f"backward() raised: {strip_hint(error)}", _residual_hint(stale, cloned))
        (expected * upstream).sum().backward()
        for name, got, want in (
            ("x", x.grad, x_ref.grad),
            ("linear.weight", linear.weight.grad, weight.grad),
            ("linear.bias", linear.bias.grad, bias.grad),
        ):
            if got is None or not torch.allclose(got, want, atol=1e-5):
                return wrong(
                    f"backward() ran, but the gradient of {name} is {'missing' if got is None else 'wrong'}.",
                    "something cut a path of the graph (detach(), .data, no_grad): let autograd see the whole block.",
                )
    return correct("same outputs, backward() works, and the gradients of x, weight and bias match torch's reference.")


# --- ch5.find_culprit ------------------------------------------------------------------------------------

CULPRIT_PROGRAM = """\
torch.manual_seed(0)
x = torch.randn(4, 3)
w1 = torch.randn(3, 5, requires_grad=True)
w2 = torch.randn(5, 2, requires_grad=True)
h = torch.relu(x @ w1)
z = h + 1
out = z @ w2
out += 0.5
z.mul_(2)
loss = out.sum()"""

_SUFFIX = re.compile(r"backward\d*$")


def _short(name: str) -> str:
    """``'MmBackward0'``, ``'mm'``, ``' Mm '`` -> ``'mm'``."""
    return _SUFFIX.sub("", name.strip().lower())


def culprit_nodes() -> list[str]:
    """The backward nodes whose saved tensor the program made stale, from ``inplace_hazards``."""
    return [hazard.node for hazard in inplace_hazards(run_program(CULPRIT_PROGRAM)["loss"])]


_CULPRIT_HINTS = {
    "mul": "Mul is the in-place op that changed the tensor (z.mul_(2)), and the error message names it, "
    "but a node that needs the old value saved it. Which op used z before the edit?",
    "add": "add produced z, but addition saves nothing for backward (its gradient is 1 for both inputs).",
    "relu": "relu saved its output h, and h was never changed in place (z = h + 1 is a new tensor).",
}


@exercise("ch5.find_culprit")
def check_find_culprit(answer):
    if not isinstance(answer, str) or not answer.strip():
        return wrong(
            "the answer should be the name of a backward node as a string, e.g. 'ExpBackward0'.",
            "use the names grad_fn shows.",
        )
    culprits = culprit_nodes()
    if _short(answer) in {_short(node) for node in culprits}:
        return correct(
            f"{culprits[0]} saved z to compute the gradient of w2, and z.mul_(2) changed it afterwards. "
            "The error message says 'output 0 of Mul': it names the op that last wrote z, not the node that needs it."
        )
    nodes = {_short(node.name) for node in autograd_graph(run_program(CULPRIT_PROGRAM)["loss"]).nodes}
    hint = _CULPRIT_HINTS.get(_short(answer))
    if hint is None and _short(answer) not in nodes:
        hint = (
            "that node is not in this graph; list the nodes with tl.autograd_graph(loss) and look at what each saved."
        )
    elif hint is None:
        hint = "that node's saved tensors are all at their saved versions; look for the one that saved z."
    return wrong(f"{answer.strip()} is not the node with the stale saved tensor.", hint)


# --- ch5.custom_linear -----------------------------------------------------------------------------------


def _linear_cases():
    """(label, arguments) pairs in float64: every way the learner's Function may be called."""
    torch.manual_seed(0)
    inputs = torch.randn(5, 3, dtype=torch.float64, requires_grad=True)
    weight = torch.randn(2, 3, dtype=torch.float64, requires_grad=True)
    bias = torch.randn(2, dtype=torch.float64, requires_grad=True)
    return [
        ("apply(inputs, weight, bias)", (inputs, weight, bias)),
        ("apply(inputs, weight) without a bias", (inputs, weight)),
        ("apply(inputs, weight, None)", (inputs, weight, None)),
        ("apply(inputs, weight, bias) with inputs that need no gradient", (inputs.detach(), weight, bias)),
        ("apply(inputs, weight) with a frozen weight", (inputs, weight.detach())),
    ]


def _hint_for(error: Exception) -> str:
    message = str(error)
    if "incorrect number of gradients" in message and "got 1)" in message:
        return "return the gradients as a tuple, (grad_inputs, grad_weight, grad_bias): a list counts as one value."
    if "incorrect number of gradients" in message and "expected 2, got 3)" in message:
        return (
            "forward got no bias here (apply(inputs, weight)), so backward must return two values: return "
            "(grad_inputs, grad_weight, None), and compute grad_bias only when a bias was given."
        )
    if "incorrect number of gradients" in message:
        return (
            "backward must return one value per input of forward, in order: (grad_inputs, grad_weight, "
            "grad_bias). None is fine for an input that needs no gradient, and extra trailing Nones are ignored."
        )
    if "forward input was not a Variable" in message:
        return "when bias is None (or not given) its gradient must be None: compute grad_bias only if bias is not None."
    if "invalid gradient" in message:
        return (
            "each gradient must have its input's shape: weight is (out, in), so grad_weight = grad_output.t() @ inputs."
        )
    if isinstance(error, IndexError):
        return (
            "ctx.needs_input_grad has one entry per input forward received: with two inputs there is no "
            "needs_input_grad[2]. Test `bias is not None` before reading it."
        )
    return "run each call on its own in a cell to see where it fails."


@exercise("ch5.custom_linear")
def check_custom_linear(cls):
    if not (isinstance(cls, type) and issubclass(cls, torch.autograd.Function)):
        return wrong(
            "the answer should be your class, a subclass of torch.autograd.Function.",
            "pass the class itself: MyLinear.",
        )
    forward, backward = inspect.getattr_static(cls, "forward"), inspect.getattr_static(cls, "backward")
    raw = [getattr(method, "__func__", method) for method in (forward, backward)]
    if all(is_stub_function(function) for function in raw):
        return not_attempted()
    if not (isinstance(forward, staticmethod) and isinstance(backward, staticmethod)):
        return wrong(
            "forward and backward must both be @staticmethod, with ctx as their first argument.",
            "the old form with self (and calling MyLinear()(...)) fails on torch 2.x; write @staticmethod and call "
            "MyLinear.apply(...).",
        )
    for label, arguments in _linear_cases():
        bias = arguments[2] if len(arguments) > 2 else None
        expected = torch.nn.functional.linear(
            *(a.detach() if a is not None else None for a in arguments[:2]), None if bias is None else bias.detach()
        )
        try:
            out = cls.apply(*arguments)
            if (
                not isinstance(out, torch.Tensor)
                or out.shape != expected.shape
                or not torch.allclose(out.detach(), expected)
            ):
                return wrong(
                    f"{label} does not compute inputs @ weight.t() + bias.",
                    "forward should return inputs @ weight.t(), plus bias when it is given.",
                )
            passed = torch.autograd.gradcheck(cls.apply, arguments, raise_exception=False)
        except Exception as error:  # noqa: BLE001 - the learner's code raised: turn it into a hint
            return wrong(f"{label}: backward raised {type(error).__name__}: {strip_hint(error)}", _hint_for(error))
        if not passed:
            return wrong(
                f"{label}: gradcheck found a gradient that differs from finite differences.",
                "grad_inputs = grad_output @ weight, grad_weight = grad_output.t() @ inputs, grad_bias = "
                "grad_output.sum(0); "
                "return None only for inputs that need no gradient.",
            )
    return correct(
        "forward matches nn.functional.linear, and backward passes gradcheck with and without a bias, "
        "with frozen inputs or weight: one gradient per input, None where there is none."
    )


# --- ch5.find_changing_line ----------------------------------------------------------------------------

CHANGING_LINE_PROGRAM = """\
torch.manual_seed(0)
model = nn.Sequential(nn.Linear(4, 8), nn.Tanh(), nn.Linear(8, 1))
optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
inputs, targets = torch.randn(16, 4), torch.randn(16, 1)
for step in range(3):
    hidden = model[1](model[0](inputs))
    prediction = model[2](hidden)
    prediction.mul_(0.5)
    hidden.clamp_(-0.9, 0.9)
    loss = ((prediction - targets) ** 2).mean()
    optimizer.zero_grad()
    loss.backward()
    optimizer.step()"""

_PROGRAM_FILE = "<ch5.find_changing_line>"
_LINE_WORD = re.compile(r"^\s*(?:line\s*)?(\d+)\s*$", re.IGNORECASE)


def changing_line_truth() -> dict:
    """Run the program under ``watch_inplace`` and return what its explanations say.

    Keys: ``changed`` (the line numbers that changed a stale saved tensor, from every explanation of the loss's
    graph), ``saved`` (the lines that saved them) and ``raised_at`` (the line where backward raised).
    """
    from ..facts.inplace_watch import explanation_of, watch_inplace

    lines = CHANGING_LINE_PROGRAM.splitlines()
    linecache.cache[_PROGRAM_FILE] = (len(CHANGING_LINE_PROGRAM), None, [line + "\n" for line in lines], _PROGRAM_FILE)
    namespace = {"torch": torch, "nn": torch.nn}
    code = compile(CHANGING_LINE_PROGRAM, _PROGRAM_FILE, "exec")
    raised_at = None
    with watch_inplace() as watch:
        try:
            exec(code, namespace)  # noqa: S102 - our own fixed program
        except RuntimeError as error:
            if explanation_of(error) is None:
                raise
            frames = [f for f in traceback.extract_tb(error.__traceback__) if f.filename == _PROGRAM_FILE]
            raised_at = frames[-1].lineno if frames else None
        explanations = watch.explain(namespace["loss"])
    changed = sorted({line for explanation in explanations for line in explanation.changed_lines})
    saved = sorted({explanation.saved_line for explanation in explanations if explanation.saved_line is not None})
    return {"changed": changed, "saved": saved, "raised_at": raised_at}


def _line_number(item):
    """A line number from an int, a numpy/torch integer, 'line 9', '9' or the line's own text; else None."""
    if isinstance(item, torch.Tensor):
        if item.numel() != 1 or item.dtype.is_floating_point or item.dtype == torch.bool:
            return None
        return int(item.item())
    if isinstance(item, str):
        match = _LINE_WORD.match(item)
        if match:
            return int(match.group(1))
        text = "".join(item.split())  # spacing does not matter: "clamp_(-0.9,0.9)" is the same line
        for number, line in enumerate(CHANGING_LINE_PROGRAM.splitlines(), start=1):
            if text and text == "".join(line.split()):
                return number
        return None
    return whole_number(item)


@exercise("ch5.find_changing_line")
def check_find_changing_line(answer):
    items = list(answer) if isinstance(answer, (list, tuple, set, frozenset)) else [answer]
    numbers = [_line_number(item) for item in items]
    if not items or None in numbers:
        return wrong(
            "the answer should be a line number of the program (an int such as 4), or the text of that line.",
            "run the program in a %%watch_inplace cell, or under `with tl.watch_inplace():`, and read 'changed at'.",
        )
    truth = changing_line_truth()
    changed, saved = truth["changed"], truth["saved"]
    lines = CHANGING_LINE_PROGRAM.splitlines()
    if sorted(set(numbers)) == changed:
        where = ", ".join(f"line {n} ({lines[n - 1].strip()})" for n in changed)
        return correct(
            f"{where} changed `hidden` after Tanh saved it (its output) and the last Linear saved it (its input, "
            "for the weight's gradient). torch raised only at loss.backward(), and its message never names this line."
        )
    wrong_line = next(n for n in numbers if n not in changed) if any(n not in changed for n in numbers) else None
    if wrong_line is None:
        return wrong(
            "every line you named changed the saved tensor, but one is missing.", "list every 'changed at' line."
        )
    if not 1 <= wrong_line <= len(lines):
        return wrong(
            f"the program has lines 1 to {len(lines)}; {wrong_line} is not one of them.",
            "count from 1 at torch.manual_seed(0).",
        )
    text = lines[wrong_line - 1].strip()
    offset = wrong_line - changed[0] if len(changed) == 1 and wrong_line > changed[0] else None
    if offset in (1, 2) and wrong_line != truth["raised_at"]:
        hint = (
            f"that line does not write into the saved tensor. If you read {wrong_line} from the watcher's output: "
            f"it numbers the lines of the cell, so inside a `with` block or below other lines its numbers are "
            f"{offset} higher than the program's; count from 1 at torch.manual_seed(0)."
        )
    elif wrong_line == truth["raised_at"]:
        hint = "that is where torch raised: backward found the stale tensor there, but it was changed earlier."
    elif wrong_line in saved:
        hint = "that line saved the tensor (the explanation's 'saved at'); which later line wrote into it?"
    elif "step" in text:
        hint = "optimizer.step() never ran: backward already failed in the first iteration."
    elif text.endswith("_(0.5)"):
        hint = "prediction.mul_ is in place, but it changes the output of a Linear layer, which no backward node saved."
    else:
        hint = "that line writes nothing in place that backward needs. Run the program under tl.watch_inplace()."
    return wrong(f"line {wrong_line} ({text}) is not the line that changed the saved tensor.", hint)


# --- quick predictions ------------------------------------------------------------------------------------------
# Each truth runs torch when the check runs. The programs are source text, shown verbatim in the notebook.

VERSIONS_PROGRAM = """\
x = torch.zeros(3)
x.add_(0)      # adds zero: no value changes
x[0] = 0.0     # writes the value x[0] already holds
y = x + 1      # a new tensor
layer = nn.Linear(3, 2)"""


def versions_truth() -> tuple[int, int, int]:
    """``(x._version, y._version, layer.weight._version)`` after ``VERSIONS_PROGRAM``."""
    namespace = run_program(VERSIONS_PROGRAM)
    return namespace["x"]._version, namespace["y"]._version, namespace["layer"].weight._version


prediction(
    "ch5.q_versions",
    versions_truth,
    why="the counter counts writes, not changed values: add_(0) and x[0] = 0.0 each add one. x + 1 is a new "
    "tensor with a counter of its own, at 0. nn.Linear fills its weight in place when it is made: version 1.",
    mistakes={
        (0, 0, 0): "add_(0) and x[0] = 0.0 change no value, but each is an in-place write, and the counter counts "
        "writes. nn.Linear fills its weight with random numbers in place when it is made.",
        (0, 0, 1): "add_(0) and x[0] = 0.0 change no value, but each is an in-place write: the counter counts writes.",
        (1, 0, 1): "x[0] = 0.0 is an in-place write too: it copies 0.0 into x's first element.",
        (2, 0, 0): "nn.Linear fills its weight with random numbers in place when it is made, so the weight is at "
        "version 1 before you use it.",
        (2, 2, 1): "y = x + 1 is a new tensor with a counter of its own: the writes to x before it do not count.",
    },
)

SAVES_OPS = {
    "x.sin()": lambda x, w: x.sin(),
    "x.relu()": lambda x, w: x.relu(),
    "x.sigmoid()": lambda x, w: x.sigmoid(),
    "x + w": lambda x, w: x + w,
    "x * w": lambda x, w: x * w,
}


def what_it_saves(op) -> str:
    """What ``op``'s backward node saved: "output" (its result), "input" (an input tensor) or "nothing" (a saved
    Python number, such as the 2 of ``x * 2``, does not count)."""
    w = torch.rand(2, 3, requires_grad=True)
    x = torch.rand(2, 3, requires_grad=True) + 0.5  # not a leaf, as inside a model
    node = autograd_graph(op(x, w)).nodes[1]  # node 0 is the output; node 1 is the op's backward node
    if any(saved.is_output for saved in node.saved):
        return "output"
    return "input" if any(saved.shape for saved in node.saved) else "nothing"


prediction(
    "ch5.q_saves",
    lambda: tuple(what_it_saves(op) for op in SAVES_OPS.values()),
    why="relu and sigmoid save their output, as exp does: their derivative can be written from the result. sin "
    "needs its input. add's derivative is 1, so it saves nothing. mul saves each operand for the other's gradient.",
    choices=("input", "output", "nothing"),
    mistakes={
        ("input", "input", "input", "nothing", "input"): "relu and sigmoid save their output, as exp does.",
        ("input", "input", "input", "input", "input"): "add's derivative is 1 for both inputs: it saves nothing.",
        ("output", "output", "output", "nothing", "input"): "sin's derivative is cos x, which the result sin x "
        "cannot give (its sign is lost): sin saves its input.",
    },
)

MESSAGE_PROGRAM = """\
a = torch.randn(3, requires_grad=True)
w = torch.randn(3, requires_grad=True)
h = a.sin()
y = h * w      # MulBackward0 saves h, to give w its gradient
h.add_(3)      # the in-place write
loss = y.sum()"""

_OUTPUT_OF = re.compile(r"which is output \d+ of (\w+?)(?:Backward\d*)?,")


def message_names() -> str:
    """The X of "which is output 0 of X" in the error that ``MESSAGE_PROGRAM``'s backward raises."""
    loss = run_program(MESSAGE_PROGRAM)["loss"]
    try:
        loss.backward()
    except RuntimeError as error:
        return _OUTPUT_OF.search(str(error)).group(1)
    raise AssertionError("MESSAGE_PROGRAM's backward did not raise")


prediction(
    "ch5.q_message_names",
    message_names,
    why="for a saved input, 'output 0 of X' names the tensor's current grad_fn: the last op autograd recorded on "
    "it, here add_. The node that needs the old h, MulBackward0, is not named.",
    choices=("Sin", "Mul", "Add"),
    mistakes={
        "Mul": "MulBackward0 saved h and needs it, but the message does not name it.",
        "Sin": "sin made h, but h.add_(3) was recorded after it: h.grad_fn is now AddBackward0.",
    },
)

RELU_AFTER = {
    "Linear": lambda: torch.nn.Linear(4, 4),
    "BatchNorm1d": lambda: torch.nn.BatchNorm1d(4),
    "Sigmoid": torch.nn.Sigmoid,
    "Tanh": torch.nn.Tanh,
}


def relu_inplace_after(make_layer) -> str:
    """Whether backward through ``make_layer()`` followed by ``nn.ReLU(inplace=True)`` "works" or "raises"."""
    torch.manual_seed(0)
    net = torch.nn.Sequential(make_layer(), torch.nn.ReLU(inplace=True))
    try:
        net(torch.randn(8, 4, requires_grad=True)).sum().backward()
    except RuntimeError as error:
        if INPLACE_ERROR in str(error):
            return "raises"
        raise
    return "works"


prediction(
    "ch5.q_relu_inplace",
    lambda: tuple(relu_inplace_after(make) for make in RELU_AFTER.values()),
    why="Sigmoid and Tanh save their output, which relu_ then overwrites. Linear saves its input and BatchNorm1d its "
    "input and statistics, not their output. The check is on versions, not values.",
    choices=("works", "raises"),
    mistakes={
        ("works", "works", "works", "works"): "a sigmoid is never negative, so relu_ changes no value after it, "
        "but it still moves the version.",
        ("raises", "raises", "raises", "raises"): "Linear and BatchNorm1d do not save their output, so nothing "
        "saved the tensor that relu_ overwrites.",
        ("works", "works", "works", "raises"): "Sigmoid saves its output, as Tanh does; relu_ changes no value "
        "after it, but it still moves the version.",
    },
)
