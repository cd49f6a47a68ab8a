"""Chapter 5 checkers: reference solutions pass, typical wrong answers get a hint.

The stubs and the registration of every exercise are tested once, in test_exercises.py.

The truths the checkers use are checked here too: what real backward() does on each program agrees with
inplace_hazards, and the notebook shows each checked program verbatim.
"""

import json
from pathlib import Path

import pytest
import torch
from exercise_asserts import assert_correct, assert_wrong

import tutorial_lib as tl
from tutorial_lib.exercises import chapter5

NOTEBOOKS = Path(__file__).resolve().parents[1] / "notebooks"
NOTEBOOK = NOTEBOOKS / "05_use_inplace_operations_safely.ipynb"
DEEP_DIVES = NOTEBOOKS / "deep_dives"
BUGS_DIVE = DEEP_DIVES / "which_inplace_bugs_are_common_and_how_do_you_fix_each.ipynb"
PLAIN_DIVE = DEEP_DIVES / "how_do_you_find_an_inplace_bug_with_plain_pytorch.ipynb"
MEMORY_DIVE = DEEP_DIVES / "does_inplace_save_memory_once_autograd_records_it.ipynb"


def notebook_text(path):
    return "\n".join("".join(cell["source"]) for cell in json.loads(path.read_text())["cells"])


# --- the truths behind the checkers ---------------------------------------------------------------------------


@pytest.mark.parametrize("letter", list(chapter5.PREDICT_PROGRAMS))
def test_predict_programs_agree_with_inplace_hazards(letter):
    source = chapter5.PREDICT_PROGRAMS[letter]
    predicted = bool(tl.inplace_hazards(chapter5.run_program(source)["loss"]))
    assert predicted == chapter5.backward_raises(source)


def test_predict_programs_mix_raising_and_working():
    truth = chapter5.predict_error_truth()
    assert any(truth) and not all(truth)


def test_culprit_program_has_one_stale_node_and_backward_raises():
    assert chapter5.culprit_nodes() == ["MmBackward0"]
    assert chapter5.backward_raises(chapter5.CULPRIT_PROGRAM)


@pytest.mark.parametrize(
    "path, sources",
    [
        (NOTEBOOK, [chapter5.CHANGING_LINE_PROGRAM, chapter5.VERSIONS_PROGRAM, chapter5.MESSAGE_PROGRAM]),
        (BUGS_DIVE, list(chapter5.PREDICT_PROGRAMS.values())),
        (PLAIN_DIVE, [chapter5.CULPRIT_PROGRAM]),
    ],
    ids=["core", "bugs dive", "plain-pytorch dive"],
)
def test_notebooks_show_the_checked_programs_verbatim(path, sources):
    text = notebook_text(path)
    for source in sources:
        assert source in text


# --- ch5.predict_error ------------------------------------------------------------------------------------------


def reference_predictions():
    """Worked out by hand (see the notebook's solution); the checker compares with real backward()."""
    return [False, True, False, True, True, True, False, False]


def test_predict_error_reference_solution():
    assert_correct("ch5.predict_error", reference_predictions())
    assert_correct("ch5.predict_error", tuple(reference_predictions()))
    assert_correct("ch5.predict_error", dict(zip("ABCDEFGH", reference_predictions())))


@pytest.mark.parametrize(
    "answer",
    [
        [True] * 8,  # "any in-place op breaks autograd"
        [False] * 8,
        [False, True, True, True, True, True, False, False],  # thinks mul always saves both operands
        [False, True, False, True, False, True, False, False],  # thinks relu_ of positive values is harmless
        [False, True, False, True, True, False, False, False],  # forgets views share the version counter
    ],
)
def test_predict_error_wrong_answers(answer):
    assert_wrong("ch5.predict_error", answer)


@pytest.mark.parametrize("answer", [[True, False], [1, 0, 1, 0, 1, 0, 1, 0], "TFTF", {"A": True}])
def test_predict_error_malformed_answers(answer):
    assert_wrong("ch5.predict_error", answer)


def test_predict_error_hint_names_the_first_wrong_program():
    answer = reference_predictions()
    answer[4] = not answer[4]
    feedback = assert_wrong("ch5.predict_error", answer)
    assert "program E" in feedback.message


def test_predict_error_names_every_wrong_program_and_explains_each():
    """Issue 19: with B and E wrong, the old checker said '6 of 8 right; program B is one you got wrong'."""
    answer = reference_predictions()
    answer[1], answer[4] = False, False  # B and E: "works"
    feedback = assert_wrong("ch5.predict_error", answer)
    assert "2 of 8 wrong: programs B and E" in feedback.message
    assert "you said backward() works for B and E" in feedback.message
    assert "B: " + chapter5._PREDICT_HINTS["B"] in feedback.hint
    assert "E: " + chapter5._PREDICT_HINTS["E"] in feedback.hint


def test_predict_error_names_wrong_programs_both_ways_and_caps_the_hints():
    feedback = assert_wrong("ch5.predict_error", [not item for item in reference_predictions()])
    assert "8 of 8 wrong: programs A, B, C, D, E, F, G and H" in feedback.message
    assert "raises for A, C, G and H and works for B, D, E and F" in feedback.message
    assert "Check D, E, F, G and H with tl.inplace_hazards(loss)." in feedback.hint


# --- ch5.fix_residual -------------------------------------------------------------------------------------------


def fixed_block(x, linear):
    x = torch.tanh(x)
    x = x + linear(x)
    return torch.relu_(x)


def fixed_block_out_of_place(x, linear):
    t = torch.tanh(x)
    return torch.relu(torch.add(t, linear(t)))


def broken_block(x, linear):
    x = torch.tanh(x)
    x += linear(x)
    return torch.relu_(x)


def detached_block(x, linear):
    t = torch.tanh(x)
    return torch.relu(t + linear(t.detach()))


def data_block(x, linear):
    t = torch.tanh(x)
    t.data = t.data + linear(t).data
    return torch.relu(t)


def clone_first_block(x, linear):
    # clone before the in-place add: tanh's output is safe, but linear saved the clone itself
    t = torch.tanh(x).clone()
    t += linear(t)
    return torch.relu(t)


def no_relu_block(x, linear):
    t = torch.tanh(x)
    return t + linear(t)


def no_grad_block(x, linear):
    with torch.no_grad():
        t = torch.tanh(x)
        return torch.relu(t + linear(t))


@pytest.mark.parametrize("solution", [fixed_block, fixed_block_out_of_place])
def test_fix_residual_solutions(solution):
    assert_correct("ch5.fix_residual", solution)


@pytest.mark.parametrize(
    "answer", [broken_block, detached_block, data_block, clone_first_block, no_relu_block, no_grad_block]
)
def test_fix_residual_wrong_answers(answer):
    assert_wrong("ch5.fix_residual", answer)


def test_fix_residual_says_when_backward_raised():
    feedback = assert_wrong("ch5.fix_residual", broken_block)
    assert "backward() raised" in feedback.message
    assert "x = x + linear(x)" in feedback.hint


def test_fix_residual_not_a_function():
    assert_wrong("ch5.fix_residual", 42)


def clone_after_tanh_block(x, linear):
    x = torch.tanh(x)
    x = x.clone()  # protects tanh's output, but linear saves this clone
    x += linear(x)
    return torch.relu_(x)


def clone_into_linear_block(x, linear):
    x = torch.tanh(x)
    x += linear(x.clone())  # protects linear's input, not tanh's output
    return torch.relu_(x)


def clone_too_late_block(x, linear):
    x = torch.tanh(x)
    x += linear(x)
    return torch.relu_(x.clone())  # after the write


@pytest.mark.parametrize(
    "block, hint_part",
    [
        (clone_first_block, "your clone() keeps tanh's output safe, but linear then saved the clone"),
        (clone_after_tanh_block, "your clone() keeps tanh's output safe, but linear then saved the clone"),
        (clone_into_linear_block, "your clone() keeps linear's input safe, but tanh saved its output"),
        (clone_too_late_block, "A clone after the write comes too late"),
    ],
)
def test_fix_residual_hint_says_where_the_clone_went_wrong(block, hint_part):
    """Issue 19: a clone() after tanh, still before x += linear(x), got the hint about tanh's output."""
    feedback = assert_wrong("ch5.fix_residual", block)
    assert hint_part in feedback.hint
    assert "x = x + linear(x)" in feedback.hint


def test_fix_residual_hint_without_a_clone_names_both_saved_tensors():
    hint = assert_wrong("ch5.fix_residual", broken_block).hint
    assert "clone" not in hint and "tanh saved (its output) and that linear saved (its input)" in hint


# --- ch5.find_culprit -------------------------------------------------------------------------------------------


@pytest.mark.parametrize("answer", ["MmBackward0", "Mm", " mmbackward0 "])
def test_find_culprit_solutions(answer):
    assert_correct("ch5.find_culprit", answer)


@pytest.mark.parametrize("answer", ["MulBackward0", "Mul", "AddBackward0", "ReluBackward0", "ExpBackward0", "", 3])
def test_find_culprit_wrong_answers(answer):
    assert_wrong("ch5.find_culprit", answer)


def test_find_culprit_explains_the_misleading_message():
    feedback = assert_wrong("ch5.find_culprit", "Mul")
    assert "saved" in feedback.hint


# --- ch5.fix_residual: unusual right answers ----------------------------------------------------------------


def clone_then_add_block(x, linear):
    # the in-place add goes into a clone that nobody saved: tanh's output and linear's input stay untouched
    t = torch.tanh(x)
    total = t.clone()
    total += linear(t)
    return total.relu_()


def functional_block(x, linear):
    t = torch.tanh(x)
    return torch.nn.functional.relu(torch.addmm(linear.bias, t, linear.weight.t()) + t)


def allowed_mutation_block(x, linear):
    # backward runs outside the context (in the checker), which the context refuses
    with torch.autograd.graph.allow_mutation_on_saved_tensors():
        x = torch.tanh(x)
        x += linear(x)
        return torch.relu_(x)


@pytest.mark.parametrize("solution", [clone_then_add_block, functional_block])
def test_fix_residual_unusual_solutions(solution):
    assert_correct("ch5.fix_residual", solution)


def test_fix_residual_rejects_a_mutation_context_left_before_backward():
    assert_wrong("ch5.fix_residual", allowed_mutation_block)


# --- ch5.custom_linear -------------------------------------------------------------------------------------------


def _variant(backward_body):
    """A Function with the reference forward and ``backward_body(ctx, grad_output, inputs, weight, bias)``."""

    class Variant(torch.autograd.Function):
        @staticmethod
        def forward(ctx, inputs, weight, bias=None):
            ctx.save_for_backward(inputs, weight, bias)
            output = inputs @ weight.t()
            return output if bias is None else output + bias

        @staticmethod
        def backward(ctx, grad_output):
            inputs, weight, bias = ctx.saved_tensors
            return backward_body(ctx, grad_output, inputs, weight, bias)

    return Variant


def _reference_backward(ctx, grad_output, inputs, weight, bias):
    grad_inputs = grad_weight = grad_bias = None
    if ctx.needs_input_grad[0]:
        grad_inputs = grad_output @ weight
    if ctx.needs_input_grad[1]:
        grad_weight = grad_output.t() @ inputs
    if bias is not None and ctx.needs_input_grad[2]:
        grad_bias = grad_output.sum(0)
    return grad_inputs, grad_weight, grad_bias


ReferenceLinear = _variant(_reference_backward)


class AlwaysComputesLinear(torch.autograd.Function):
    """Unusual but right: ignores needs_input_grad, keeps a flag on ctx instead of saving bias."""

    @staticmethod
    def forward(ctx, inputs, weight, bias=None):
        ctx.save_for_backward(inputs, weight)
        ctx.has_bias = bias is not None
        return torch.nn.functional.linear(inputs, weight, bias)

    @staticmethod
    def backward(ctx, grad_output):
        inputs, weight = ctx.saved_tensors
        return grad_output @ weight, grad_output.t() @ inputs, grad_output.sum(0) if ctx.has_bias else None


class AddmmLinear(torch.autograd.Function):
    """Unusual but right: addmm in forward, einsum in backward, the bias gradient only when asked."""

    @staticmethod
    def forward(ctx, inputs, weight, bias=None):
        ctx.save_for_backward(inputs, weight)
        if bias is None:
            return inputs.mm(weight.t())
        return torch.addmm(bias, inputs, weight.t())

    @staticmethod
    def backward(ctx, grad_output):
        inputs, weight = ctx.saved_tensors
        grads = [torch.einsum("bo,oi->bi", grad_output, weight), torch.einsum("bo,bi->oi", grad_output, inputs)]
        if len(ctx.needs_input_grad) == 3:  # a bias was passed, perhaps None
            grads.append(grad_output.sum(0) if ctx.needs_input_grad[2] else None)
        return tuple(grads)


class OldStyleLinear(torch.autograd.Function):
    def forward(self, inputs, weight, bias=None):  # the seed's form: no @staticmethod
        self.save_for_backward(inputs, weight, bias)
        output = inputs @ weight.t()
        return output if bias is None else output + bias

    def backward(self, grad_output):
        inputs, weight, bias = self.saved_tensors
        return grad_output @ weight, grad_output.t() @ inputs, None if bias is None else grad_output.sum(0)


WRONG_LINEARS = {
    "forgets the bias gradient": _variant(lambda ctx, g, x, w, b: (g @ w, g.t() @ x)),
    "bias gradient even without a bias": _variant(lambda ctx, g, x, w, b: (g @ w, g.t() @ x, g.sum(0))),
    "transposed weight gradient": _variant(lambda ctx, g, x, w, b: (g @ w, x.t() @ g, None if b is None else g.sum(0))),
    "needs_input_grad[2] without checking bias": _variant(
        lambda ctx, g, x, w, b: (g @ w, g.t() @ x, g.sum(0) if ctx.needs_input_grad[2] else None)
    ),
    "bias gradient not summed over the batch": _variant(
        lambda ctx, g, x, w, b: (g @ w, g.t() @ x, None if b is None else g.mean(0))
    ),
    "returns a list (autograd reads it as one value)": _variant(
        lambda ctx, g, x, w, b: [g @ w, g.t() @ x, None if b is None else g.sum(0)]
    ),
    "None for the weight although it needs one": _variant(
        lambda ctx, g, x, w, b: (g @ w, None, None if b is None else g.sum(0))
    ),
}


def test_custom_linear_reference_solution():
    assert_correct("ch5.custom_linear", ReferenceLinear)


@pytest.mark.parametrize("solution", [AlwaysComputesLinear, AddmmLinear])
def test_custom_linear_unusual_solutions(solution):
    assert_correct("ch5.custom_linear", solution)


@pytest.mark.parametrize("label", list(WRONG_LINEARS))
def test_custom_linear_wrong_backwards(label):
    assert_wrong("ch5.custom_linear", WRONG_LINEARS[label])


def test_custom_linear_rejects_the_old_form_with_a_hint():
    feedback = assert_wrong("ch5.custom_linear", OldStyleLinear)
    assert "staticmethod" in feedback.message and ".apply" in feedback.hint


def test_custom_linear_hints_name_the_rule():
    assert "one value per input" in assert_wrong("ch5.custom_linear", WRONG_LINEARS["forgets the bias gradient"]).hint
    assert "None" in assert_wrong("ch5.custom_linear", WRONG_LINEARS["bias gradient even without a bias"]).hint
    assert (
        "needs_input_grad"
        in assert_wrong("ch5.custom_linear", WRONG_LINEARS["needs_input_grad[2] without checking bias"]).hint
    )


@pytest.mark.filterwarnings("ignore:.*should not be instantiated:DeprecationWarning")
def test_custom_linear_rejects_an_instance():
    assert_wrong("ch5.custom_linear", ReferenceLinear())


@pytest.mark.filterwarnings("ignore:.*should not be instantiated:DeprecationWarning")
@pytest.mark.parametrize("answer", ["MyLinear", torch.nn.Linear, 3])
def test_custom_linear_not_a_function_class(answer):
    assert_wrong("ch5.custom_linear", answer)


# --- facts the chapter's prose rests on (section 8 and the resize/set_ misconception) ---------------------------


def test_mul_by_itself_in_place_cannot_run_backward_but_square_can():
    h = torch.randn(3, requires_grad=True) * 1
    h.mul_(h)
    assert [hazard.node for hazard in tl.inplace_hazards(h)] == ["MulBackward0"]
    with pytest.raises(RuntimeError, match="modified by an inplace operation"):
        h.sum().backward()
    a = torch.randn(3, requires_grad=True)
    h = a * 1
    h.square_()
    h.sum().backward()
    assert torch.allclose(a.grad, 2 * a.detach())


def test_set_on_a_clone_is_accepted_but_backward_fails():
    changed = torch.arange(6.0).requires_grad_().clone().set_(torch.zeros(4))
    with pytest.raises(RuntimeError, match="derivative for set_ is not implemented"):
        changed.sum().backward()


def test_memory_comparison_runs_backward_for_every_row():
    notebook = json.loads(MEMORY_DIVE.read_text())
    cell = next("".join(c["source"]) for c in notebook["cells"] if "def measure(step):" in "".join(c["source"]))
    assert "h.sum().backward()" in cell and "mul_(h)" not in cell


# --- independent review (issue 10): more wrong and unusual right answers ---------------------------------------


@pytest.mark.parametrize(
    "answer",
    [
        [False, True, False, True, True, True, False, True],  # thinks h * h after h += 1 still sees the old h
        [False, True, False, True, True, True, True, False],  # thinks any write before backward breaks G
        [True, True, False, True, True, True, False, False],  # thinks exp saves its input too
    ],
)
def test_predict_error_single_slips(answer):
    assert_wrong("ch5.predict_error", answer)


def linear_first_block(x, linear):
    # unusual but right: the in-place add goes into linear's output, which nobody saved
    t = torch.tanh(x)
    total = linear(t)
    total += t
    return torch.relu_(total)


def tanh_in_place_on_a_clone_block(x, linear):
    # unusual but right: tanh_ on a fresh clone, before anything saved it
    t = x.clone()
    t.tanh_()
    return torch.relu(t + linear(t))


def clamp_in_place_block(x, linear):
    # unusual but right: relu spelled as clamp_(min=0) on the unsaved sum
    t = torch.tanh(x)
    return (t + linear(t)).clamp_(min=0)


def relu_before_add_block(x, linear):
    t = torch.tanh(x)
    return torch.relu(t) + linear(t)


@pytest.mark.parametrize("solution", [linear_first_block, tanh_in_place_on_a_clone_block, clamp_in_place_block])
def test_fix_residual_more_unusual_solutions(solution):
    assert_correct("ch5.fix_residual", solution)


def test_fix_residual_rejects_relu_before_the_add():
    assert_wrong("ch5.fix_residual", relu_before_add_block)


@pytest.mark.parametrize("answer", ["AccumulateGrad", "SumBackward0", "torch::autograd::CopySlices"])
def test_find_culprit_more_wrong_answers(answer):
    assert_wrong("ch5.find_culprit", answer)


def test_find_culprit_accepts_the_name_without_its_number():
    assert_correct("ch5.find_culprit", "MmBackward")


MORE_WRONG_LINEARS = {
    "ignores grad_output": _variant(
        lambda ctx, g, x, w, b: (
            torch.ones_like(g) @ w,
            torch.ones_like(g).t() @ x,
            None if b is None else torch.ones_like(g).sum(0),
        )
    ),
    "bias gradient summed to a scalar": _variant(
        lambda ctx, g, x, w, b: (g @ w, g.t() @ x, None if b is None else g.sum())
    ),
    "weight gradient averaged over the batch": _variant(
        lambda ctx, g, x, w, b: (g @ w, g.t() @ x / x.shape[0], None if b is None else g.sum(0))
    ),
    "grad_inputs with weight.t()": _variant(
        lambda ctx, g, x, w, b: (g @ w.t(), g.t() @ x, None if b is None else g.sum(0))
    ),
    "drops the bias slot when bias=None is passed": _variant(
        lambda ctx, g, x, w, b: (g @ w, g.t() @ x) + (() if b is None else (g.sum(0),))
    ),
}


@pytest.mark.parametrize("label", list(MORE_WRONG_LINEARS))
def test_custom_linear_more_wrong_backwards(label):
    assert_wrong("ch5.custom_linear", MORE_WRONG_LINEARS[label])


def test_custom_linear_accepts_an_unreduced_bias_gradient():
    # autograd sums a gradient whose shape the input broadcasts to down to the input's shape (notebook, section 7)
    assert_correct("ch5.custom_linear", _variant(lambda ctx, g, x, w, b: (g @ w, g.t() @ x, None if b is None else g)))


# --- facts behind the reviewed prose ------------------------------------------------------------------------------


def test_saved_tensor_hooks_skip_the_version_check():
    for hooks in (
        lambda: torch.autograd.graph.saved_tensors_hooks(lambda t: t, lambda t: t),
        torch.autograd.graph.save_on_cpu,
    ):
        a = torch.tensor([0.5, 1.0, 2.0], requires_grad=True)
        with hooks():
            b = a.exp()
        b.mul_(2)
        assert b.grad_fn.name() == "MulBackward0"  # the write is recorded (fact-check F6): recording is not enough
        b.sum().backward()  # no error
        assert torch.allclose(a.grad, 4 * a.detach().exp())  # the true gradient is 2 * exp(a)


def test_inplace_hazards_sees_checkpoint_inputs_and_foreach_but_not_what_a_checkpoint_reads_outside():
    """The chapter's section 5 end: checkpoint inputs and _foreach_* saved tensors are reported; a tensor the
    checkpointed function reads from outside its arguments is not, and ``unseen`` says so (torch raises nothing)."""
    from torch.utils.checkpoint import checkpoint

    x = torch.randn(3, requires_grad=True) * 1
    y = checkpoint(torch.sin, x, use_reentrant=False)
    x.add_(1)
    assert [hazard.what for hazard in tl.inplace_hazards(y)] == ["input 0 of a checkpointed function"]
    with pytest.raises(RuntimeError, match="modified by an inplace operation"):
        y.sum().backward()

    a = torch.randn(3, requires_grad=True)
    ys = torch._foreach_exp([a * 1, a * 2])
    ys[0].add_(1)
    loss = ys[0].sum() + ys[1].sum()
    assert [hazard.node for hazard in tl.inplace_hazards(loss)] == ["ForeachExpBackward0"]
    with pytest.raises(RuntimeError, match="modified by an inplace operation"):
        loss.backward()

    scale = torch.ones(3)
    y = checkpoint(lambda t: t.sin() * scale, a, use_reentrant=False)
    scale.add_(1)
    hazards = tl.inplace_hazards(y)
    assert hazards == [] and any("outside its arguments" in text for text in hazards.unseen)
    y.sum().backward()
    assert torch.allclose(a.grad, 2 * a.detach().cos())  # silently the new scale


def test_write_through_detach_of_a_saved_leaf_is_caught_only_at_backward():
    weight = torch.randn(3, requires_grad=True)
    loss = (torch.randn(3, requires_grad=True) * weight).sum()
    weight.detach().sub_(0.1)  # allowed while recording
    assert weight._version == 1
    with pytest.raises(RuntimeError, match=r"\[torch.FloatTensor \[3\]\] is at version 1"):
        loss.backward()


def test_message_names_the_creator_after_an_unrecorded_write_to_a_saved_input():
    a, w = torch.randn(3, requires_grad=True), torch.randn(3, requires_grad=True)
    h = a.sin()
    y = h * w
    with torch.no_grad():
        h.add_(1)
    with pytest.raises(RuntimeError, match="output 0 of Sin"):
        y.sum().backward()


def test_out_argument_is_refused_only_for_results_that_would_require_grad():
    h = torch.randn(3, requires_grad=True) * 2
    with pytest.raises(RuntimeError, match="out=... arguments don't support automatic differentiation"):
        torch.add(h, 1, out=torch.empty(3))
    mask = torch.empty(3, dtype=torch.bool)
    torch.gt(h, 0, out=mask)
    assert not mask.requires_grad


def test_a_stale_multi_output_piece_can_still_be_read_through_detach():
    h = torch.randn(4, 3, requires_grad=True) * 1
    first = h.unbind()[0]
    h.mul_(2)
    with pytest.raises(RuntimeError, match="its base or another view of its base has been modified inplace"):
        first * 1
    assert torch.equal(first.detach(), h.detach()[0])


# --- ch5.find_changing_line ------------------------------------------------------------------------------------


def test_changing_line_truth_comes_from_the_watcher_and_matches_the_program():
    truth = chapter5.changing_line_truth()
    lines = chapter5.CHANGING_LINE_PROGRAM.splitlines()
    assert truth == {"changed": [9], "saved": [6, 7], "raised_at": 12}
    assert lines[8].strip() == "hidden.clamp_(-0.9, 0.9)"
    assert lines[11].strip() == "loss.backward()"


def test_changing_line_program_raises_the_version_error_without_the_watcher():
    namespace = {"torch": torch, "nn": torch.nn}
    with pytest.raises(RuntimeError, match="modified by an inplace operation"):
        exec(chapter5.CHANGING_LINE_PROGRAM, namespace)  # noqa: S102
    assert namespace["step"] == 0  # the first iteration: optimizer.step() (line 13) never ran


@pytest.mark.parametrize("fixed_line", ["    hidden = hidden.clamp(-0.9, 0.9)\n", ""])
def test_changing_line_solution_fixes_train(fixed_line):
    """The fixes the notebook's solution names: the clamp out of place, or clamping before the last layer."""
    source = chapter5.CHANGING_LINE_PROGRAM.replace("    hidden.clamp_(-0.9, 0.9)\n", fixed_line)
    if not fixed_line:
        source = source.replace("model[2](hidden)", "model[2](hidden.clamp(-0.9, 0.9))")
    namespace = {"torch": torch, "nn": torch.nn}
    exec(source, namespace)  # noqa: S102
    assert namespace["step"] == 2


def test_changing_line_decoy_is_harmless_alone():
    """Without the clamp_, the program trains (the mul_ on prediction changes nothing anyone saved)."""
    source = chapter5.CHANGING_LINE_PROGRAM.replace("    hidden.clamp_(-0.9, 0.9)\n", "")
    namespace = {"torch": torch, "nn": torch.nn}
    exec(source, namespace)  # noqa: S102
    assert namespace["step"] == 2


@pytest.mark.parametrize(
    "answer",
    [
        9,
        "hidden.clamp_(-0.9, 0.9)",
        "  hidden.clamp_(-0.9,   0.9)  ",
        "hidden.clamp_(-0.9,0.9)",
        "line 9",
        "Line 9",
        "9",
        [9],
        (9,),
        {9},
        torch.tensor(9),
        __import__("numpy").int64(9),
        [9, "hidden.clamp_(-0.9, 0.9)"],
    ],
)
def test_find_changing_line_right_answers(answer):
    assert_correct("ch5.find_changing_line", answer)


@pytest.mark.parametrize(
    "answer",
    [
        12,
        6,
        7,
        8,
        13,
        10,
        [6, 9],
        [9, 12],
        "loss.backward()",
        "line 6",
        0,
        14,
        -1,
        11,
        "9, 12",
        "hidden.clamp(-0.9, 0.9)",
    ],
)
def test_find_changing_line_wrong_answers(answer):
    assert_wrong("ch5.find_changing_line", answer)


@pytest.mark.parametrize("answer", [True, 9.0, 9.5, "x", "", [], torch.tensor(9.0), torch.tensor([9, 9]), {"line": 9}])
def test_find_changing_line_malformed_answers(answer):
    assert_wrong("ch5.find_changing_line", answer)


@pytest.mark.parametrize(
    "answer, hint_part",
    [
        (12, "where torch raised"),
        (6, "saved the tensor"),
        (7, "saved the tensor"),
        (8, "no backward node saved"),
        (13, "never ran"),
        (10, "count from 1 at torch.manual_seed(0)"),  # the line number read inside a `with tl.watch_inplace():` block
    ],
)
def test_find_changing_line_hints_say_why_the_line_is_wrong(answer, hint_part):
    assert hint_part in assert_wrong("ch5.find_changing_line", answer).hint


def test_custom_linear_a_bias_gradient_without_a_bias_is_told_to_return_none():
    # apply(inputs, weight) gives forward two inputs: a third gradient must be None, not g.sum(0)
    always_three = _variant(lambda ctx, g, inputs, weight, bias: (g @ weight, g.t() @ inputs, g.sum(0)))
    feedback = assert_wrong("ch5.custom_linear", always_three)
    assert "(grad_inputs, grad_weight, None)" in feedback.hint


# --- fact-check findings of 2026-11-27 (F5, F7), each a rule the chapter once stated too broadly ------------------


@pytest.mark.parametrize("module", [torch.nn.AlphaDropout, torch.nn.FeatureAlphaDropout])
def test_alpha_dropouts_ignore_inplace_true(module):
    """F7: AlphaDropout and FeatureAlphaDropout never write in place, even in training with p > 0."""
    x = torch.ones(2, 4, 3, 3)
    out = module(p=0.5, inplace=True).train()(x)
    assert out is not x and x._version == 0 and torch.equal(x, torch.ones(2, 4, 3, 3))


@pytest.mark.parametrize("module", [torch.nn.Dropout, torch.nn.Dropout2d])
def test_the_other_dropouts_write_in_place_in_training(module):
    x = torch.ones(2, 4, 3, 3)
    assert module(p=0.5, inplace=True).train()(x) is x and x._version == 1


def test_views_of_an_inference_tensor_have_no_counter_wherever_they_are_made():
    """F5: 'every tensor made outside inference_mode carries a counter' is false for views of inference tensors."""
    with torch.inference_mode():
        made_inside = torch.zeros(4)
    view, detached = made_inside[1:], made_inside.detach()
    with pytest.raises(RuntimeError, match="Inference tensors do not track version counter"):
        view._version
    with torch.inference_mode():
        detached.add_(1)
    assert detached.is_inference() and detached._version == 0


def test_the_core_states_the_scope_of_a_gradient_without_an_error():
    """F6: the chapter once said a recorded write that backward accepts gives the out-of-place gradient."""
    core = notebook_text(NOTEBOOK)
    assert "No error proves only that the saved tensors autograd checked kept their versions." in core
    graph_dive = notebook_text(DEEP_DIVES / "what_does_an_inplace_write_do_to_the_autograd_graph.ipynb")
    assert "the write moves the counter of every saved tensor it changes" in graph_dive  # rules-05 B13


# --- the chapter's text: claims the reviews broke must not come back ---------------------------------------------

CHAPTER_5_NOTEBOOKS = [NOTEBOOK] + [
    DEEP_DIVES / f"{name}.ipynb"
    for name in [
        "what_counts_as_an_inplace_write",
        "what_does_an_inplace_write_do_to_the_autograd_graph",
        "how_do_you_find_an_inplace_bug_with_plain_pytorch",
        "when_does_an_inplace_write_give_a_wrong_gradient_without_an_error",
        "does_inplace_save_memory_once_autograd_records_it",
        "how_do_you_write_a_custom_autograd_function_that_works_in_place",
        "how_do_you_change_a_saved_tensor_on_purpose",
        "which_inplace_bugs_are_common_and_how_do_you_fix_each",
    ]
]


def chapter_5_prose():
    """The markdown of the core chapter and its eight deep dives, lower-cased, with runs of white space as one."""
    cells = [cell for path in CHAPTER_5_NOTEBOOKS for cell in json.loads(path.read_text())["cells"]]
    text = " ".join("".join(cell["source"]) for cell in cells if cell["cell_type"] == "markdown")
    return " ".join(text.lower().split())


@pytest.mark.parametrize(
    "old_claim",
    [
        "every tensor made outside `torch.inference_mode()` carries a counter",  # fact-check F5
        "when backward works the gradient is the one an out-of-place program gives",  # F6
        "(like the other dropout modules)",  # F7: the alpha dropouts never write in place
        "which ddp runs on parameters and gradients",  # F4 went too far (rules-05 B3): DDP's wrap moves the counter
        "ddp runs them:",  # B3
        "backward fails when a tensor that a backward node saved is changed in place",  # B1: only nodes it reaches
        "a function that autograd can differentiate refuses `out=`",  # B2: tensordot, linalg.norm... accept it
        "autograd cannot record such a write",  # B2: they record it as CopyBackwards
        "does not break backward after a layer that does not save its output",  # B4: Sigmoid, Identity, ReLU_
        "after layers that keep no output",  # B4
        "`x += f(x)` breaks only when",  # B5: a chunk piece raises another error
        "it breaks only when something saved `x`",  # B5
        "reproduces that experiment: exactly 400,000,000 bytes",  # B6: chapter 6 measures 1000 x 1000
        "a new tensor starts at 0",  # B7: F.one_hot is at 2, nn.Linear's weight at 1
        "the write is `add_` on each weight",  # B8: Adam writes with addcdiv_
        "yes, but the graph never recorded the write | wrong gradient",  # B9: it may raise instead
        "`nn.linear` saves a view of its weight",  # B10: only when its input requires grad
        "for a saved *output*, part 2 names the operation that saved it",  # B11: sort's indices have no part 2
        "`mul` and `@` save each operand",  # B12: a 3-d non-contiguous x @ W saves a copy
        "it holds when autograd records the write and checks the saved tensor",  # B13: a saved alias
        "records the write **and checks** every saved tensor",  # B13
        "everything else about the count and the types is checked",  # B14: another dtype is cast
        "it does not allocate a new tensor",  # B15: out= into an empty tensor allocates
        "writes into memory the tensor already owns",  # B15
        "`+=` and its friends",  # B16: @= rebinds
        "seed article",  # learner review: jargon a learner cannot decode
        "listed in `00_start_here`",  # chapter 0 no longer lists the articles
        "step after every backward",  # rules-new: it changes what the GAN's discriminator learns
        "put `relu(inplace=true)` where nothing saved its input",  # final hunt: a leaf or an unbind output refuses
    ],
)
def test_a_broken_claim_does_not_come_back(old_claim):
    assert old_claim not in chapter_5_prose()


def test_backward_fails_only_when_it_reaches_the_node_with_the_stale_tensor():
    """B1: the rule says 'when it reaches a node'; a backward that does not reach ExpBackward0 works."""
    a, c = torch.randn(3, requires_grad=True), torch.randn(3, requires_grad=True)
    b = a.exp()
    y = b * 1 + c
    b.mul_(2)  # ExpBackward0's saved result is stale
    y.sum().backward(inputs=[c])
    assert torch.equal(c.grad, torch.ones(3))
    with pytest.raises(RuntimeError, match="modified by an inplace operation"):
        y.sum().backward()


def test_some_differentiable_functions_record_an_out_write():
    """B2: 'most functions refuse out=' while recording; tensordot accepts it and records a copy."""
    a = torch.randn(3, 3, requires_grad=True)
    out = torch.empty(0)
    torch.tensordot(a, a, dims=1, out=out)
    assert out.grad_fn.name().endswith("CopyBackwards")


@pytest.mark.parametrize("between", [torch.nn.Identity(), torch.nn.Dropout(0.1).eval()], ids=["Identity", "eval"])
def test_relu_inplace_after_a_layer_that_passes_its_input_through_still_raises(between):
    """B4: the layer right before ReLU(inplace=True) saves nothing, but the Tanh before it saved the tensor."""
    net = torch.nn.Sequential(torch.nn.Tanh(), between, torch.nn.ReLU(inplace=True))
    with pytest.raises(RuntimeError, match="output 0 of Tanh"):
        net(torch.randn(8, 4, requires_grad=True)).sum().backward()


def test_adding_into_a_chunk_piece_raises_another_error():
    """B5: `x += f(x)` raises *the version error* only when something saved x; a chunk piece refuses the write."""
    x1, x2 = torch.nn.Linear(4, 4)(torch.randn(3, 4)).chunk(2, dim=1)
    with pytest.raises(RuntimeError, match="is a view and is being modified inplace"):
        x2 += torch.nn.Linear(2, 2)(x1)


def test_at_equals_rebinds_and_the_others_write_in_place():
    """B16: the core lists +=, -=, *= and /=; @= is not in place."""
    x = original = torch.eye(2)
    x @= torch.eye(2)
    assert x is not original and original._version == 0
    for statement in ["x += 2", "x -= 2", "x *= 2", "x /= 2"]:
        namespace = {"x": torch.ones(2)}
        before = namespace["x"]
        exec(statement, namespace)  # noqa: S102
        assert namespace["x"] is before and before._version == 1


def test_the_changing_line_exercise_has_its_program_in_a_collapsed_watch_cell():
    """Learner review: the exercise gives a ready %%watch_inplace cell; its stored output (the answer) is collapsed."""
    code = [cell for cell in json.loads(NOTEBOOK.read_text())["cells"] if cell["cell_type"] == "code"]
    stub = next(i for i, cell in enumerate(code) if "".join(cell["source"]).startswith("answer = ...  # a line"))
    watch = code[stub - 1]
    assert "".join(watch["source"]) == "%%watch_inplace\n" + chapter5.CHANGING_LINE_PROGRAM.rstrip("\n")
    assert watch["metadata"]["jupyter"]["outputs_hidden"] is True
