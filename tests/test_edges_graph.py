"""facts/graph.py, pictures/graph_picture.py and explorers/graph_stepper.py at the edges (issue 13, sections 3 and 4).

Ground truth is always torch's: whether a real ``backward()`` raises "modified by an inplace operation",
the versions and the "output N of X" its message names, an independent walk of ``next_functions``,
call counters inside a custom Function's backward, and the CPU allocator's own events (the profiler with
``profile_memory=True``). Each test failed before the fix it guards.
"""

from __future__ import annotations

import random
import re
import warnings
import xml.etree.ElementTree as ElementTree
from collections import Counter

import pytest
import torch
import torch.nn.functional as F
from allocator_truth import allocator_figures
from torch.utils._python_dispatch import TorchDispatchMode
from torch.utils.checkpoint import checkpoint

import tutorial_lib as tl
from tests.test_graph import (
    STEP_KINDS,
    backward_error,
    check_hazards_against_backward,
    random_program,
    run_program,
    torch_walk,
    versions_in,
)
from tutorial_lib import autograd_graph, inplace_hazards
from tutorial_lib.common.text import plural
from tutorial_lib.pictures.scene import visible

OUTPUT_OF = re.compile(r"which is output (\d+) of (\w+),")


def assert_agrees_with_backward(out: torch.Tensor) -> tuple[list, str | None]:
    """The central property on one tensor: hazards iff backward raises, and the versions agree."""
    hazards = inplace_hazards(out)
    error = backward_error(out)
    assert (hazards == []) == (error is None), (hazards, error)
    if error is not None:
        assert versions_in(error) in {(h.current_version, h.saved_version) for h in hazards}, (hazards, error)
    return hazards, error


# ---------------------------------------------------------------------------------------------------------
# Checkpoints
# ---------------------------------------------------------------------------------------------------------


@pytest.mark.parametrize("reentrant", [False, True])
@pytest.mark.parametrize("edit", [False, True])
def test_checkpoint_input_changed_in_place_is_a_hazard(reentrant, edit):
    a = torch.randn(3, requires_grad=True) * 1
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        out = checkpoint(lambda t: t.exp() * t, a, use_reentrant=reentrant)
    if edit:
        with torch.no_grad():
            a.add_(1)
    graph = autograd_graph(out)
    assert any("checkpoint" in note for note in graph.unseen)  # closure tensors are not seen: said so
    hazards, error = assert_agrees_with_backward(out)
    assert (error is not None) == edit
    if edit and not reentrant:
        (hazard,) = hazards
        assert "checkpoint" in hazard.explanation and hazard.saved_version == 0


def test_checkpoint_hazard_show_error_does_not_contradict_itself():
    a = torch.randn(3, requires_grad=True) * 1
    out = checkpoint(lambda t: t.exp() * t, a, use_reentrant=False)
    with torch.no_grad():
        a.add_(1)
    report = tl.show_error(lambda: out.sum().backward(), graph_of=out)
    assert report.raised and "is at version 1; expected version 0" in report.message
    assert report.hazards and "no saved tensor" not in report.summary
    assert "1 saved tensor changed in place" in report.figure.summary


def test_checkpoint_inspection_does_not_recompute():
    calls = []

    def region(t):
        calls.append("forward")
        return t.exp() * t

    a = torch.randn(3, requires_grad=True) * 1
    out = checkpoint(region, a, use_reentrant=False)
    assert calls == ["forward"]
    inplace_hazards(out)
    autograd_graph(out)
    assert calls == ["forward"]  # looking did not recompute
    out.sum().backward()
    assert calls == ["forward", "forward"]  # backward does


def test_other_saved_tensors_hooks_are_reported_unseen():
    x = torch.randn(3, requires_grad=True)
    with torch.autograd.graph.saved_tensors_hooks(lambda t: t, lambda t: t):
        y = x * 1
        z = torch.sin(y)
    y.add_(1)  # autograd does not check hooked tensors: backward passes with a changed value
    hazards = inplace_hazards(z)
    assert hazards == [] and hazards.unseen and "saved_tensors_hooks" in repr(hazards)
    assert "not checked" in tl.draw_graph(z).summary
    assert backward_error(z) is None


# ---------------------------------------------------------------------------------------------------------
# torch._foreach_* nodes: no Python accessors
# ---------------------------------------------------------------------------------------------------------


@pytest.mark.parametrize("op", ["exp", "mul", "sigmoid"])
@pytest.mark.parametrize("edited", [None, 0, 1])
def test_foreach_saved_tensors_are_checked(op, edited):
    a = torch.randn(3, requires_grad=True) * 1
    b = torch.randn(2, requires_grad=True) * 1
    if op == "mul":
        ys = torch._foreach_mul([a, b], [b[:1].expand(3) * 1, a[:2] * 1])
    else:
        ys = getattr(torch, f"_foreach_{op}")([a, b])
    assert type(ys[0].grad_fn).__name__ == "CppFunction"  # no Python accessors: why this needed care
    target = (a, b)[edited] if op == "mul" and edited is not None else (ys[edited] if edited is not None else None)
    if target is not None:
        target.mul_(2)
    out = ys[0].sum() + ys[1].sum() if op != "mul" or edited is None else (ys[0] * 1).sum() + (ys[1] * 1).sum()
    hazards, error = assert_agrees_with_backward(out)
    if error is not None:
        named = OUTPUT_OF.search(error)
        (hazard,) = hazards
        assert f"_foreach_{op}" in hazard.what
        if named:  # torch's own words for the stale tensor are repeated
            assert f"output {named.group(1)} of {named.group(2)}" in hazard.what


# ---------------------------------------------------------------------------------------------------------
# Custom Functions with several saved outputs
# ---------------------------------------------------------------------------------------------------------


def _two_outputs(order, first_edits_in_forward):
    class Two(torch.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            first, second = x.exp(), x.sin()
            for _ in range(first_edits_in_forward):  # saved at version 1: not stale later
                first.mul_(1.0)
            ctx.save_for_backward(*((first, second) if order == 0 else (second, first)))
            return first, second

        @staticmethod
        def backward(ctx, g1, g2):
            saved = ctx.saved_tensors
            return g1 * saved[0] + g2 * saved[1]

    return Two


@pytest.mark.parametrize("order", [0, 1])
@pytest.mark.parametrize("first_edits_in_forward", [0, 1])
@pytest.mark.parametrize("edits", [(0, 1), (1, 0), (0, 2), (1, 1)])
def test_custom_function_blames_the_output_torch_names(order, first_edits_in_forward, edits):
    x = torch.randn(3, requires_grad=True)
    first, second = _two_outputs(order, first_edits_in_forward).apply(x * 1)
    for _ in range(edits[0]):
        first.mul_(2)
    for _ in range(edits[1]):
        second.mul_(2)
    out = (first * 1).sum() + (second * 1).sum()
    hazards, error = assert_agrees_with_backward(out)
    named = int(OUTPUT_OF.search(error).group(1))
    (hazard,) = hazards
    assert f"output {named} of Two" in hazard.what, (hazard.what, error)
    assert (hazard.current_version, hazard.saved_version) == versions_in(error)


# ---------------------------------------------------------------------------------------------------------
# Saved outputs are called outputs, with torch's op names
# ---------------------------------------------------------------------------------------------------------


def _spd(x):
    return x @ x.mT + 4 * torch.eye(x.shape[-1], dtype=x.dtype)


MULTI_OUTPUT_CASES = {
    # name: (forward returning the outputs, which output to edit, aten op name)
    "sort_indices": (lambda x: x.sort(), 1, "sort"),
    "topk_indices": (lambda x: x.topk(2), 1, "topk"),
    "max_dim_indices": (lambda x: x.max(dim=1), 1, "max"),
    "cholesky_L": (lambda x: (torch.linalg.cholesky(_spd(x)),), 0, "linalg_cholesky_ex"),
    "eigh_vectors": (lambda x: torch.linalg.eigh(x + x.mT), 1, "linalg_eigh"),
    "inv": (lambda x: (torch.linalg.inv(_spd(x)),), 0, "linalg_inv_ex"),
    "sdpa": (
        lambda x: (F.scaled_dot_product_attention(*[x.float().view(1, 1, 4, 4)] * 3),),
        0,
        "_scaled_dot_product_flash_attention_for_cpu",
    ),
}


@pytest.mark.parametrize("case", sorted(MULTI_OUTPUT_CASES))
def test_saved_outputs_are_called_outputs_with_torch_names(case):
    forward, edited, op = MULTI_OUTPUT_CASES[case]
    x = torch.randn(4, 4, dtype=torch.float64, requires_grad=True)
    outputs = forward(x * 1)
    differentiable = [t for t in outputs if t.requires_grad]
    out = sum(t.sum() for t in differentiable)
    outputs[edited].zero_() if not outputs[edited].is_floating_point() else outputs[edited].mul_(1)
    hazards, error = assert_agrees_with_backward(out)
    assert error is not None
    (hazard,) = hazards
    named = OUTPUT_OF.search(error)
    position = int(named.group(1)) if named else edited  # non-differentiable outputs are not named by torch
    assert hazard.what.startswith(f"output {position} ") and hazard.what.endswith(f" of {op}"), hazard.what
    assert "input" not in hazard.what


def test_a_saved_input_made_by_the_same_op_is_still_an_input():
    """torch's message names the saved tensor's creator ("output 0 of Mul"): for a saved input made by
    another mul that is not this mul's output."""
    a = torch.randn(3, requires_grad=True)
    made_by_mul = a * 2
    product = a.exp() * made_by_mul  # MulBackward0 saves made_by_mul as 'other'
    with torch.no_grad():  # keeps made_by_mul's grad_fn, so the message names Mul
        made_by_mul.add_(1)
    hazards, error = assert_agrees_with_backward(product)
    assert "output 0 of Mul" in error
    assert [h.what for h in hazards] == ["input 'other' of mul"]


@pytest.mark.parametrize(
    "node_name, op",
    [
        ("LinalgCholeskyExBackward0", "linalg_cholesky_ex"),
        ("MaxPool2DWithIndicesBackward0", "max_pool2d_with_indices"),
        ("NativeLayerNormBackward0", "native_layer_norm"),
        ("ExpBackward0", "exp"),
        ("PowBackward1", "pow"),
        ("ForeachMulBackward0List", "_foreach_mul"),
        ("UpsampleBilinear2DBackward0", "upsample_bilinear2d"),
    ],
)
def test_forward_op_names_are_torch_op_names(node_name, op):
    node = tl.GraphNode(1, node_name, "backward", node_name)
    assert node.forward_op == op
    assert hasattr(torch.ops.aten, op)  # the truth: the op exists under that name


# ---------------------------------------------------------------------------------------------------------
# Looking runs nothing: no user code, no real gradient, no memory
# ---------------------------------------------------------------------------------------------------------


class ScaleInPlace(torch.autograd.Function):
    calls = 0

    @staticmethod
    def forward(ctx, x):
        x.mul_(2)
        ctx.mark_dirty(x)
        ctx.save_for_backward(x)
        return x

    @staticmethod
    def backward(ctx, grad):
        ScaleInPlace.calls += 1
        (x,) = ctx.saved_tensors
        return grad * 2 + 0 * x


@pytest.mark.parametrize("edit_after", [False, True])
def test_custom_function_inside_copy_slices_is_read_not_run(edit_after):
    y = torch.randn(4, 3, requires_grad=True) * 1
    ScaleInPlace.apply(y[0])
    assert y.grad_fn.name().endswith("CopySlices")
    if edit_after:
        y.add_(1)
    ScaleInPlace.calls = 0
    for _ in range(3):
        hazards = inplace_hazards(y.sum())
        autograd_graph(y.sum())
    assert ScaleInPlace.calls == 0  # its Python backward never ran
    hazards, error = assert_agrees_with_backward(y.sum())
    if edit_after:
        assert "ScaleInPlace.forward" in hazards[0].what


class _RealOps(TorchDispatchMode):
    """Records every aten op that makes new (not viewed) real memory for more than 16 elements."""

    def __init__(self):
        super().__init__()
        self.ops = []

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        result = func(*args, **(kwargs or {}))
        flat = torch.utils._pytree.tree_leaves((args, kwargs))
        real = [t for t in flat if isinstance(t, torch.Tensor) and t.device.type != "meta"]
        inputs = {t.untyped_storage().data_ptr() for t in real}
        for t in result if isinstance(result, (tuple, list)) else (result,):
            if isinstance(t, torch.Tensor) and t.device.type != "meta" and t.numel() > 16:
                if t.untyped_storage().data_ptr() not in inputs:
                    self.ops.append(str(func))
        return result


def _allocator_peak(fn) -> int:
    """Peak bytes the CPU allocator held above its level at the start, from its own allocation events."""
    return allocator_figures(fn)[0].peak


def test_inspecting_a_64_mib_copy_slices_graph_allocates_nothing_big():
    x = torch.randn(4096, 4096, requires_grad=True)  # 64 MiB
    y = x * 1
    y[0].exp_()
    y[1].mul_(y[2] * 1)
    out = y.sum()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        peak = _allocator_peak(lambda: (inplace_hazards(out), autograd_graph(out)))
    real_check = _allocator_peak(lambda: torch.zeros(4096, 4096))  # the profiler does see such an allocation
    assert real_check >= 64 * 2**20
    assert peak < 2**20, peak
    with _RealOps() as mode:
        inplace_hazards(out)
    assert mode.ops == [], mode.ops
    y.add_(1)  # now stale: found the same way
    assert assert_agrees_with_backward(out)[1] is not None


# ---------------------------------------------------------------------------------------------------------
# Counts past the node cap
# ---------------------------------------------------------------------------------------------------------


def test_summary_counts_the_whole_graph_past_the_cap():
    x = torch.ones(3, requires_grad=True)
    y = x
    for _ in range(5000):
        y = y * 1.0001
    fns, edges, _ = torch_walk(y)
    truth_leaves = sum(1 for fn in fns[1:] if fn.name().endswith("AccumulateGrad"))
    truth_backward = len(fns) - 1 - truth_leaves
    assert (truth_backward, truth_leaves, len(edges)) == (5000, 1, 5001)
    graph = autograd_graph(y)
    assert graph.truncated and graph.counts == (truth_backward, truth_leaves, len(edges))
    summary = tl.graph_svg(y, max_nodes=30).split("<title>")[1].split("</title>")[0]
    assert f"{len(fns)} nodes ({truth_backward} backward, {truth_leaves} leaf, 1 output), {len(edges)} edges" in summary


# ---------------------------------------------------------------------------------------------------------
# Section 4: split views whose base changed; control characters in SVG
# ---------------------------------------------------------------------------------------------------------


#: torch's refusal, naming the node "Split" (2.13) or "SplitBackward0" (2.11)
SPLIT_VIEW = r"Split(Backward0)? is a view"


def _split_after_base_change():
    x = torch.randn(4, requires_grad=True)
    b = x * 2
    p, q = b.split(2)
    b.add_(1)  # legal: only using p or q afterwards is refused
    with pytest.raises(RuntimeError, match=SPLIT_VIEW):
        p.grad_fn  # the truth: torch refuses to build p's grad_fn
    return x, b, p


def test_graph_stepper_survives_a_split_view_whose_base_changed():
    stepper = tl.GraphStepper(
        [
            ("leaf", "x = torch.randn(4, requires_grad=True)"),
            ("double", "b = x * 2"),
            ("split", "p, q = b.split(2)"),
            ("change the base", "b.add_(1)"),
            ("use b", "y = b.sum()"),
            ("look at p", "p"),
        ],
        target=None,
    )
    while stepper.step_forward():
        pass
    assert "graph of y" in stepper.summary
    looking_at_p = tl.GraphStepper(
        [
            ("", "x = torch.randn(4, requires_grad=True)"),
            ("", "p, q = (x * 2).split(2)"),
            ("", "q.add_(1) if False else p._base.add_(1)"),
        ],
        target="p",
    )
    while looking_at_p.step_forward():
        pass
    assert looking_at_p.graph.unseen and "grad_fn cannot be read" in looking_at_p.graph.unseen[0]
    assert looking_at_p.hazards == [] and looking_at_p.hazards.unseen
    assert "not checked" in looking_at_p.summary and re.search(SPLIT_VIEW, looking_at_p.summary)


def test_show_error_with_graph_of_a_split_view_whose_base_changed():
    x, b, p = _split_after_base_change()
    report = tl.show_error(lambda: p.sum().backward(), graph_of=p)
    assert report.raised and re.search(SPLIT_VIEW, report.message) and report.figure is None
    report = tl.show_error(lambda: b.sum().backward(), graph_of=b, names={"p": p, "x": x})
    assert not report.raised
    # asked directly, the library answers as torch does: with torch's own error
    with pytest.raises(RuntimeError, match=SPLIT_VIEW):
        tl.inplace_hazards(p)


@pytest.mark.parametrize("name", ["a\x01b", "tab\tand\x1bescape", "nul\x00", "\ufffe"])
def test_graph_svg_with_control_characters_in_names_parses(name):
    x = torch.randn(3, requires_grad=True)
    svg = tl.graph_svg(x.exp() * x, names={name: x})
    ElementTree.fromstring(svg)  # the truth: an XML parser accepts it
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # no "Glyph 1 missing from font" from matplotlib either
        figure = tl.draw_graph(x.exp() * x, names={name: x})
        figure.canvas.draw()
    assert visible(name) in [text for ident, text in figure.scene.texts() if ident.startswith("label:")]


# ---------------------------------------------------------------------------------------------------------
# The random programs with the new step kinds: each class is exercised, and found
# ---------------------------------------------------------------------------------------------------------


def test_random_programs_find_hazards_of_every_new_kind():
    rng = random.Random(13)
    found = Counter()
    for _ in range(400):
        program = random_program(rng, max_steps=12, kinds=STEP_KINDS)
        check_hazards_against_backward(program)  # hazards iff backward raises, versions agree
        for hazard in inplace_hazards(run_program(program).out):
            if "checkpoint" in hazard.explanation:
                found["checkpoint"] += 1
            for kind in ("ForeachExp", "ForeachMul", "TwoOutputs", "Sort", "Max", "CheckpointFunction"):
                found[kind] += hazard.node.startswith(kind)
    assert all(
        found[kind] >= 3
        for kind in ("checkpoint", "ForeachExp", "ForeachMul", "TwoOutputs", "Sort", "Max", "CheckpointFunction")
    ), found


# ---------------------------------------------------------------------------------------------------------
# CopySlices that backward reaches with no gradient: it skips its check
# ---------------------------------------------------------------------------------------------------------


def test_copy_slices_below_an_unused_foreach_output_is_skipped_as_backward_skips_it():
    a = torch.randn(3, 3, requires_grad=True)
    edited = a * 1
    edited[0].exp_()  # CopySlices wrapping exp_, which saves its result
    used, unused = torch._foreach_exp([a * 1, edited])
    edited.add_(1)  # stale inside the CopySlices ...
    hazards, error = assert_agrees_with_backward(used.sum())
    assert error is None and hazards == []  # ... but no gradient reaches it, and torch does not check


class ReturnsNoGradient(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x):
        return x * 2

    @staticmethod
    def backward(ctx, grad):
        return None


class ReturnsItsGradient(ReturnsNoGradient):
    @staticmethod
    def backward(ctx, grad):
        return grad * 2


@pytest.mark.parametrize("function", [ReturnsNoGradient, ReturnsItsGradient])
def test_copy_slices_below_a_custom_function_is_reported_with_the_doubt_said(function):
    a = torch.randn(3, 3, requires_grad=True)
    edited = a * 1
    edited[0].exp_()
    out = function.apply(edited).sum()
    edited.add_(1)
    hazards = inplace_hazards(out)
    error = backward_error(out)
    assert (error is None) == (function is ReturnsNoGradient)  # torch: only a returned gradient reaches it
    assert len(hazards) == 1 and any("custom Functions above return a gradient" in u for u in hazards.unseen)


# ---------------------------------------------------------------------------------------------------------
# What a graph still holds (issue 20, section 3; fact-check #2): backward(inputs=...) and autograd.grad(out,
# some_inputs) run only the nodes on the way to those inputs, and a custom Function's ctx attributes are never
# freed. Ground truth: whether autograd still gives a saved tensor (``_saved_*`` raises once freed) and whether
# its storage is still alive (a weak reference to it, every other reference dropped).
# ---------------------------------------------------------------------------------------------------------


def partial_graph(size: int):
    """z = x1.exp().sum() + (x2 * 3).sin().sum() + x3.pow(2).sum(), with weak references to the storages its
    nodes saved that nothing but the graph holds (the exp result, the sin input)."""
    from torch.multiprocessing.reductions import StorageWeakRef

    x1, x2, x3 = (torch.randn(size, requires_grad=True) for _ in range(3))
    e = x1.exp()
    m = x2 * 3
    z = e.sum() + m.sin().sum() + x3.pow(2).sum()
    refs = {"ExpBackward0": StorageWeakRef(e.untyped_storage()), "SinBackward0": StorageWeakRef(m.untyped_storage())}
    del e, m
    return z, (x1, x2, x3), refs


def nodes_of(z: torch.Tensor) -> list:
    """Every backward node of z's graph, by an independent walk of ``next_functions``."""
    seen, todo, order = set(), [z.grad_fn], []
    while todo:
        fn = todo.pop()
        if fn is None or id(fn) in seen:
            continue
        seen.add(id(fn))
        order.append(fn)
        todo.extend(child for child, _ in fn.next_functions)
    return order


def saved_given(fn) -> dict[str, torch.Tensor | None]:
    """autograd's own answer for each saved tensor of ``fn``: the tensor it still gives, or None once freed
    (reading ``_saved_*`` raises "... already been freed")."""
    given = {}
    for attribute in dir(fn):
        if not attribute.startswith("_saved_") or attribute.endswith("_sym_sizes"):
            continue
        try:
            value = getattr(fn, attribute)
        except RuntimeError as error:
            assert "freed" in str(error)
            given[attribute] = None
            continue
        if isinstance(value, torch.Tensor):
            given[attribute] = value
    return given


@pytest.mark.parametrize("run", ["backward(inputs=)", "autograd.grad"])
@pytest.mark.parametrize("asked", [(0,), (1,), (2,), (0, 2)])
def test_a_partial_backward_says_which_saved_tensors_are_still_held(run, asked):
    from tutorial_lib.facts.graph import held_by_graph

    z, leaves, refs = partial_graph(1000)
    inputs = [leaves[i] for i in asked]
    if run == "autograd.grad":
        torch.autograd.grad(z, inputs)
    else:
        z.backward(inputs=inputs)
    truth = {fn.name(): saved_given(fn) for fn in nodes_of(z)}
    for name, ref in refs.items():  # a saved tensor still given is memory still alive, a freed one is gone
        assert (not ref.expired()) == all(value is not None for value in truth[name].values())
    still = sorted(name for name, given in truth.items() if any(value is not None for value in given.values()))
    freed = sum(value is None for given in truth.values() for value in given.values())
    storages = {
        v.untyped_storage().data_ptr(): v.untyped_storage().nbytes()
        for g in truth.values()
        for v in g.values()
        if v is not None
    }
    held = held_by_graph(autograd_graph(z))
    assert sorted({name for name, _ in held.saved}) == still and held.freed == freed
    assert held.nbytes == sum(storages.values())
    summary = tl.draw_graph(z).summary
    assert f"{freed} saved tensor{'s' if freed != 1 else ''} already freed by backward()" in summary
    said = summary.split("did not run through (")[1].split(")")[0]
    assert sorted(said.split(", ")) == still
    assert "memory still held by the graph: " in summary
    # a later pass through the nodes not yet run needs no retain_graph: their saved tensors were kept
    del truth, held  # they hold the saved tensors they read
    torch.autograd.grad(z, [leaf for i, leaf in enumerate(leaves) if i not in asked])
    assert all(ref.expired() for ref in refs.values())
    assert "still held" not in tl.draw_graph(z).summary


class KeepOnCtx(torch.autograd.Function):
    """Keeps its result as a ctx attribute instead of saving it (fact-check #2's pattern)."""

    @staticmethod
    def forward(ctx, t):
        ctx.result = t.exp()
        ctx.parts = [t * 2, "not a tensor"]
        ctx.save_for_backward(t)
        return ctx.result.clone()

    @staticmethod
    def backward(ctx, grad):
        (t,) = ctx.saved_tensors
        return grad * ctx.result + 0 * t


def test_tensors_kept_on_ctx_are_said_to_be_held_after_backward():
    from torch.multiprocessing.reductions import StorageWeakRef

    from tutorial_lib.facts.graph import held_by_graph

    w = torch.randn(1000, 1000, requires_grad=True)
    loss = KeepOnCtx.apply(w).sum()
    ctx = loss.grad_fn.next_functions[0][0]
    refs = [StorageWeakRef(ctx.result.untyped_storage()), StorageWeakRef(ctx.parts[0].untyped_storage())]
    loss.backward()
    del ctx
    assert not any(ref.expired() for ref in refs)  # the truth: backward freed saved_tensors, not these
    graph = autograd_graph(loss)
    (node,) = graph.find("KeepOnCtxBackward")
    assert [(k.attribute, k.shape, k.storage_nbytes) for k in node.kept] == [
        ("ctx.result", (1000, 1000), 4_000_000),
        ("ctx.parts[0]", (1000, 1000), 4_000_000),
    ]
    assert [s.state for s in node.saved] == ["freed"]
    held = held_by_graph(graph)
    assert held.nbytes == 8_000_000 and (held.freed, held.freed_custom) == (0, 1)  # its saved_tensors: count unknown
    summary = tl.draw_graph(loss).summary
    assert "2 tensors kept on ctx (KeepOnCtxBackward ctx.result, KeepOnCtxBackward ctx.parts[0])" in summary
    assert "backward() does not free them" in summary and "memory still held by the graph: 7.63 MiB" in summary
    del graph, node, loss
    import gc

    gc.collect()
    assert all(ref.expired() for ref in refs)  # the graph was what held them


class ExpOnCtx(torch.autograd.Function):
    """Saves nothing with save_for_backward: its result is kept on ctx only (the backward deep dive's example)."""

    @staticmethod
    def forward(ctx, t):
        ctx.result = t.exp()
        return ctx.result.clone()

    @staticmethod
    def backward(ctx, grad):
        return grad * ctx.result


@pytest.mark.parametrize("function", [ExpOnCtx, KeepOnCtx])
def test_freed_counts_only_saved_tensors_autograd_names(function):
    """A custom Function's saved tensors cannot be counted once freed (``_raw_saved_tensors`` raises): the summary
    counted one "saved tensor" for ExpOnCtx, which saved none. Ground truth: what each node saved, read before
    backward (``_saved_*`` of built-in nodes, ``_raw_saved_tensors`` of the custom one), and freed after."""
    from tutorial_lib.facts.graph import held_by_graph

    w = torch.tensor(0.5, requires_grad=True)
    loss = function.apply(torch.randn(1000) * w).sum()
    nodes = nodes_of(loss)
    custom = [fn for fn in nodes if isinstance(fn, torch.autograd.function.BackwardCFunction)]
    built_in = sum(len(saved_given(fn)) for fn in nodes if fn not in custom)
    custom_saved = sum(len(fn._raw_saved_tensors) for fn in custom)
    loss.backward()
    assert all(value is None for fn in nodes for value in saved_given(fn).values())  # all freed
    summary = tl.draw_graph(loss).summary
    assert f"{plural(built_in + 1, 'saved tensor')} already freed" not in summary  # the old count, wrong for ExpOnCtx
    assert f"{plural(built_in, 'saved tensor')} and whatever 1 custom Function node saved" in summary
    assert custom_saved == (1 if function is KeepOnCtx else 0) and "kept on ctx" in summary
    held = held_by_graph(autograd_graph(loss))
    assert (held.freed, held.freed_custom) == (built_in, len(custom))


def test_a_graph_before_backward_frees_nothing_and_says_nothing_still_held():
    z, _, _ = partial_graph(10)
    summary = tl.draw_graph(z).summary
    assert "freed" not in summary and "still held" not in summary
    z.backward()
    summary = tl.draw_graph(z).summary
    freed = sum(value is None for fn in nodes_of(z) for value in saved_given(fn).values())
    assert f"{freed} saved tensors already freed by backward()" in summary and "still held" not in summary


def test_graph_stepper_says_what_a_custom_function_keeps_on_ctx():
    setup = (
        "class Keep(torch.autograd.Function):\n"
        "    @staticmethod\n"
        "    def forward(ctx, t):\n"
        "        ctx.result = t.exp()\n"
        "        return ctx.result.clone()\n"
        "    @staticmethod\n"
        "    def backward(ctx, g):\n"
        "        return g * ctx.result\n"
        "w = torch.ones(3, requires_grad=True)"
    )
    stepper = tl.GraphStepper([("apply", "loss = Keep.apply(w).sum()"), ("backward", "loss.backward()")], setup=setup)
    stepper.step_forward()
    stepper.step_forward()
    assert "kept on ctx (backward() does not free them): KeepBackward.ctx.result" in stepper.summary
    assert "1 tensor kept on ctx (KeepBackward ctx.result): backward() does not free it" in stepper.scene.title
