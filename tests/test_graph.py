"""graph.py against ground truth that torch computes.

The truths used here: whether torch's own ``backward()`` raises "modified by an inplace operation" (and
the versions its message names), an independent walk of ``grad_fn.next_functions``, tensors'
``._version`` counters, and the ``.grad`` that backward leaves on leaves. Nothing is compared only with
a number written by hand.

The centre is a random program generator: a list of steps over a pool of tensors (two leaves that
require grad and one constant that does not). Steps compute new tensors with ops that save their inputs,
save their outputs or save nothing, and edit existing tensors in place, directly or through views.
"""

from __future__ import annotations

import math
import random
import re
import warnings
from collections import Counter, deque
from dataclasses import dataclass

import pytest
import torch
from hypothesis import event, given, settings
from hypothesis import strategies as st
from models import SavesW

import tutorial_lib.facts.graph as graph_module
from tutorial_lib import Graph, GraphNode, Hazard, autograd_graph, inplace_hazards
from tutorial_lib.facts.graph import (
    DEFAULT_MAX_NODES,
    FREED_ERROR_ALREADY_FREED,
    FREED_ERROR_SECOND_BACKWARD,
    VERSION_ERROR,
    custom_function_saver,
    describe_saved,
    error_shape_and_dtype,
    error_versions,
    grad_fn_of,
    refused_graph,
)

INPLACE_ERROR = "modified by an inplace operation"
#: Whether this torch unpacks one saved tensor alone (2.13: ``SavedTensor.unpack()``; 2.11 has none).
UNPACKS_ALONE = hasattr(torch._C._autograd.SavedTensor, "unpack")
VERSIONS_IN_ERROR = re.compile(r"is at version (\d+); expected version (\d+)")


# ---------------------------------------------------------------------------------------------------------
# The random program generator
# ---------------------------------------------------------------------------------------------------------

# Ops that compute a new tensor from y (and z) and append it to the pool. c is the constant (no grad).
SAVE_INPUTS = {
    "mul": lambda y, z, c: y * z,
    "mul_const": lambda y, z, c: y * c,  # saves c: editing c later is a hazard
    "div": lambda y, z, c: y / z,
    "pow": lambda y, z, c: torch.pow(y, z),  # saves self, exponent and result
    "square": lambda y, z, c: y.pow(2),
    "log": lambda y, z, c: torch.log(y),
    "sin": lambda y, z, c: torch.sin(y),
    "cos": lambda y, z, c: torch.cos(y),
    "matmul": lambda y, z, c: y @ z,
    "where": lambda y, z, c: torch.where(c > 0, y, z),  # saves only the (fresh) condition
}
SAVE_OUTPUT = {
    "exp": lambda y, z, c: torch.exp(y),
    "sigmoid": lambda y, z, c: torch.sigmoid(y),
    "tanh": lambda y, z, c: torch.tanh(y),
    "relu": lambda y, z, c: torch.relu(y),
    "sqrt": lambda y, z, c: torch.sqrt(y),
}
SAVE_NOTHING = {  # views included
    "add": lambda y, z, c: y + z,
    "sub": lambda y, z, c: y - z,
    "neg": lambda y, z, c: -y,
    "add_const": lambda y, z, c: y + c,
    "t": lambda y, z, c: y.t(),
    "view": lambda y, z, c: y.view(y.shape),
    "view_chain": lambda y, z, c: y.view(-1).view(y.shape),
    "reshape": lambda y, z, c: y.reshape(y.shape),
    "slice": lambda y, z, c: y[:],
    "select": lambda y, z, c: y[0],
}


class TwoOutputs(torch.autograd.Function):
    """exp and sin of one input, saving (sin output, input, exp output): two saved outputs and an input."""

    @staticmethod
    def forward(ctx, a):
        first, second = a.exp(), a.sin()
        ctx.save_for_backward(second, a, first)
        return first, second

    @staticmethod
    def backward(ctx, grad_first, grad_second):
        second, a, first = ctx.saved_tensors
        return grad_first * first + grad_second * torch.cos(a) + 0 * second


def _checkpointed(y, z, reentrant):
    from torch.utils.checkpoint import checkpoint

    with warnings.catch_warnings():  # reentrant: "None of the inputs have requires_grad=True"
        warnings.simplefilter("ignore")
        return checkpoint(lambda t, u: t.exp() * u, y, z, use_reentrant=reentrant)


# Ops with several outputs (all join the pool), checkpoints, foreach ops and a custom Function.
SAVE_MANY = {
    "sort": lambda y, z, c: tuple(y.sort(dim=-1)),  # saves its output indices
    "max_dim": lambda y, z, c: tuple(y.max(dim=0)),  # saves its output indices
    "checkpoint": lambda y, z, c: _checkpointed(y, z, False),  # keeps y and z aside, recomputes the rest
    "checkpoint_reentrant": lambda y, z, c: _checkpointed(y, z, True),  # saves y and z with save_for_backward
    "foreach_exp": lambda y, z, c: tuple(torch._foreach_exp([y, z])),  # saves its outputs, not readable
    "foreach_mul": lambda y, z, c: tuple(torch._foreach_mul([y, z], [z, y])),  # saves its inputs, not readable
    "custom_two": lambda y, z, c: TwoOutputs.apply(y),
}
COMPUTE = {**SAVE_INPUTS, **SAVE_OUTPUT, **SAVE_NOTHING, **SAVE_MANY}


def _no_grad_mul(y, z):
    with torch.no_grad():
        y.mul_(2)


def _iadd(y, z):
    y += z


# Ops that edit y (a tensor that may be edited in place: not a leaf that requires grad, nor a view of one).
INPLACE = {
    "add_": lambda y, z: y.add_(1),
    "mul_": lambda y, z: y.mul_(2),
    "iadd": _iadd,
    "mul_tensor_": lambda y, z: y.mul_(z),
    "relu_": lambda y, z: y.relu_(),
    "clamp_": lambda y, z: y.clamp_(-1, 1),
    "nn_relu_inplace": lambda y, z: torch.nn.ReLU(inplace=True)(y),
    "exp_": lambda y, z: y.exp_(),
    "sigmoid_": lambda y, z: y.sigmoid_(),
    "no_grad_mul_": _no_grad_mul,  # still bumps the version
    "data_mul_": lambda y, z: y.data.mul_(2),  # .data has its own version counter: never a hazard
    "detach_mul_": lambda y, z: y.detach().mul_(2),  # detach() shares the version counter
    # through views
    "select_mul_": lambda y, z: y[0].mul_(2),
    "flat_add_": lambda y, z: y.view(-1).add_(1),
    "t_add_": lambda y, z: y.t().add_(1),
    "select_exp_": lambda y, z: y[0].exp_(),  # the view's ExpBackward0 (inside CopySlices) saves its result
    "select_relu_": lambda y, z: y[0].relu_(),
    "select_mul_tensor_": lambda y, z: y[0].mul_(z[0]),  # saves z[0] inside CopySlices
}

# Edits of the constant (which never requires grad).
CONSTANT_EDITS = {
    "const_add_": lambda c: c.add_(1),
    "const_mul_": lambda c: c.mul_(2),
    "const_select_add_": lambda c: c[0].add_(1),
}

# Weights (by repetition, as sampled_from is uniform) chosen so that about half the programs raise.
CLASSIC_STEP_KINDS = (
    2 * (tuple(SAVE_INPUTS) + tuple(SAVE_OUTPUT)) + tuple(SAVE_NOTHING) + 3 * tuple(INPLACE) + 2 * tuple(CONSTANT_EDITS)
)
# With checkpoints, foreach ops, multi-output ops and a custom Function: what graph.py's tests use.
# (random_program's default stays CLASSIC_STEP_KINDS: tests/test_inplace_watch.py draws from it.)
STEP_KINDS = CLASSIC_STEP_KINDS + 2 * tuple(SAVE_MANY)
OUT_MODES = ("last", "sum_all", "scaled_sum_of_last")


@dataclass(frozen=True)
class Program:
    steps: tuple[tuple[str, int, int], ...]  # (kind, i, j): i and j pick the operands (see _pick)
    out_mode: str
    seed: int


def programs(max_steps: int = 10):
    step = st.tuples(st.sampled_from(STEP_KINDS), st.integers(0, 40), st.integers(0, 40))
    return st.builds(
        Program,
        steps=st.lists(step, min_size=2, max_size=max_steps).map(tuple),
        out_mode=st.sampled_from(OUT_MODES),
        seed=st.integers(0, 2**16),
    )


def random_program(rng: random.Random, max_steps: int = 10, kinds=CLASSIC_STEP_KINDS) -> Program:
    """The same distribution shape as ``programs()``, from a seeded ``random.Random`` (``kinds=STEP_KINDS``
    for the same steps)."""
    steps = tuple((rng.choice(kinds), rng.randrange(41), rng.randrange(41)) for _ in range(rng.randint(2, max_steps)))
    return Program(steps, rng.choice(OUT_MODES), rng.randrange(2**16))


def _editable(t: torch.Tensor) -> bool:
    """In-place edits are legal on t: it is not a leaf that requires grad, nor a view of one."""
    base = t._base if t._base is not None else t
    return not (t.is_leaf and t.requires_grad) and not (base.is_leaf and base.requires_grad)


def _pick(pool: list, i: int):
    """Even i: one of the 2 newest tensors (chains of ops, so in-place edits hit saved tensors);
    odd i: any tensor of the pool."""
    return pool[-1 - (i // 2) % min(2, len(pool))] if i % 2 == 0 else pool[(i // 2) % len(pool)]


@dataclass
class Run:
    leaves: tuple[torch.Tensor, torch.Tensor]
    constant: torch.Tensor
    pool: list[torch.Tensor]
    out: torch.Tensor
    skipped: int


def run_program(program: Program) -> Run:
    """Execute a program. Steps that torch refuses at op time (shape mismatch, 0-dim select) are skipped:
    they change nothing, and the same steps are skipped when the program is rebuilt from the same seed."""
    gen = torch.Generator().manual_seed(program.seed)
    a = torch.randn(3, 3, generator=gen, dtype=torch.float64).requires_grad_()
    b = torch.randn(3, 3, generator=gen, dtype=torch.float64).requires_grad_()
    c = torch.randn(3, 3, generator=gen, dtype=torch.float64)
    pool = [a, b, c, a + b]  # an intermediate from the start: edits of saved inputs are possible at once
    recent: list[torch.Tensor] = []  # the operands and result of the latest compute step
    skipped = 0
    for kind, i, j in program.steps:
        y, z = _pick(pool, i), _pick(pool, j)
        try:
            if kind in COMPUTE:
                made = COMPUTE[kind](y, z, c)
                made = list(made) if isinstance(made, (tuple, list)) else [made]
                pool.extend(made)
                recent = [y, z, *made][-4:]
            elif kind in INPLACE:
                # i % 4 < 3: edit what the latest op just used or made (the classic hazard) when that is legal
                chosen = recent[i % 4] if i % 4 < len(recent) else None
                target = (
                    chosen if chosen is not None and _editable(chosen) else _pick([t for t in pool if _editable(t)], i)
                )
                if target.is_floating_point():
                    INPLACE[kind](target, z)
                else:  # integer indices (sort, max): keep them valid, or backward fails for another reason
                    target.zero_()
            else:
                CONSTANT_EDITS[kind](c)
        except (RuntimeError, IndexError) as error:
            assert "leaf Variable" not in str(error), "the generator made an illegal in-place edit"
            skipped += 1
    grad_pool = [t for t in pool if t.requires_grad]
    if program.out_mode == "last":
        out = grad_pool[-1]
    elif program.out_mode == "sum_all":
        out = sum(t.sum() for t in grad_pool)
    else:
        out = (grad_pool[-1] * 2).sum() + grad_pool[-2].sum()
    return Run((a, b), c, pool, out, skipped)


def backward_error(out: torch.Tensor, **kwargs) -> str | None:
    """Run the real backward; the in-place error's message, or None when it succeeds."""
    try:
        out.backward(torch.ones_like(out), **kwargs)
    except RuntimeError as error:
        if INPLACE_ERROR in str(error):
            return str(error)
        raise
    return None


def versions_in(message: str) -> tuple[int, int]:
    """(current, saved) from autograd's message."""
    match = VERSIONS_IN_ERROR.search(message)
    assert match, message
    return int(match.group(1)), int(match.group(2))


def check_hazards_against_backward(program: Program) -> bool:
    """The central property on one program. Returns whether backward raised."""
    run = run_program(program)
    hazards = inplace_hazards(run.out)
    error = backward_error(run.out)
    assert (hazards == []) == (error is None), (program, hazards, error)
    for hazard in hazards:
        assert hazard.saved_version != hazard.current_version
    if error is not None:
        pairs = {(h.current_version, h.saved_version) for h in hazards}
        assert versions_in(error) in pairs, (program, error, hazards)
    return error is not None


# ---------------------------------------------------------------------------------------------------------
# 1. inplace_hazards(out) == []  <=>  backward() does not raise
# ---------------------------------------------------------------------------------------------------------


@settings(max_examples=250)
@given(programs())
def test_hazards_iff_backward_raises_hypothesis(program):
    raised = check_hazards_against_backward(program)
    event("backward raised" if raised else "backward succeeded")


def test_hazards_iff_backward_raises_seeded_programs_both_outcomes_common():
    """300 seeded programs; both outcomes must be common, so the property above is not passed trivially."""
    rng = random.Random(20240611)
    outcomes = Counter(check_hazards_against_backward(random_program(rng, kinds=STEP_KINDS)) for _ in range(300))
    assert outcomes[True] >= 60 and outcomes[False] >= 60, outcomes


# ---------------------------------------------------------------------------------------------------------
# 2. Taking the snapshot changes nothing
# ---------------------------------------------------------------------------------------------------------


@settings(max_examples=80)
@given(programs())
def test_snapshot_does_not_change_backward(program):
    plain = run_program(program)
    plain_error = backward_error(plain.out)

    snapped = run_program(program)
    versions = [t._version for t in snapped.pool]
    probe = torch.ones(1, requires_grad=True)
    snapped.out.grad_fn  # a view whose base was edited gets its grad_fn made lazily, on first access
    before = (probe * 1).grad_fn._sequence_nr()  # autograd numbers every node it creates
    autograd_graph(snapped.out)
    hazards = inplace_hazards(snapped.out)
    if not hazards:  # so looking created no node. (A stale saved view is another matter: to name it in
        # the error message, autograd regenerates the view's grad_fn, once, as backward itself would.)
        assert (probe * 1).grad_fn._sequence_nr() == before + 1
    assert [t._version for t in snapped.pool] == versions
    snapped_error = backward_error(snapped.out)

    assert snapped_error == plain_error
    assert (hazards == []) == (plain_error is None)
    if plain_error is None:
        event("grads compared")
        for mine, theirs in zip(snapped.leaves, plain.leaves):
            assert (mine.grad is None) == (theirs.grad is None)
            if mine.grad is not None:
                assert torch.allclose(mine.grad, theirs.grad, equal_nan=True), program


# ---------------------------------------------------------------------------------------------------------
# 3. Graph structure against an independent walk of next_functions
# ---------------------------------------------------------------------------------------------------------


def torch_walk(root: torch.Tensor):
    """Breadth-first over ``grad_fn.next_functions``, nearest first: (node objects, edges as index pairs,
    depth of each node). Node 0 is the output tensor itself, as in ``Graph``."""
    fns: list = [None]  # index 0: the output
    depth = [0]
    edges: list[tuple[int, int]] = []
    if root.grad_fn is None:
        return fns, edges, depth
    seen = {id(root.grad_fn): 1}
    fns.append(root.grad_fn)
    depth.append(1)
    edges.append((0, 1))
    queue = deque([root.grad_fn])
    while queue:
        fn = queue.popleft()
        here = seen[id(fn)]
        for child, _ in fn.next_functions:
            if child is None:
                continue
            if id(child) not in seen:
                seen[id(child)] = len(fns)
                fns.append(child)
                depth.append(depth[here] + 1)
                queue.append(child)
            edges.append((here, seen[id(child)]))
    return fns, edges, depth


def torch_saved(fn) -> dict | None:
    """What torch says a built-in node saved, by attribute: the unpacked tensor, or ("stale", current
    version read from the raw saved tensor) when autograd refuses to unpack it. None once freed."""
    found = {}
    for attr in dir(fn):
        if not attr.startswith("_raw_saved_"):
            continue
        short = attr.removeprefix("_raw_saved_")
        try:
            raw = getattr(fn, attr)
        except RuntimeError as error:
            assert "freed" in str(error)
            return None
        items = list(enumerate(raw)) if isinstance(raw, (list, tuple)) else [(None, raw)]
        for index, item in items:
            if item is None:
                continue
            if item.unpack_hook is not None:  # unpacking would run the hook (recompute a checkpoint)
                found[short if index is None else f"{short}[{index}]"] = ("hooked",)
                continue
            try:
                value = getattr(fn, "_saved_" + short)
                value = value if index is None else value[index]
            except RuntimeError as error:
                assert INPLACE_ERROR in str(error)
                value = ("stale", item.data._version)
            if value is not None:  # None: not saved because not needed
                found[short if index is None else f"{short}[{index}]"] = value
    return found


def check_saved_against_torch(node: GraphNode, fn) -> None:
    truth = torch_saved(fn)
    if truth is None:
        return
    # a checkpoint's kept inputs are listed on the first node of its region, beside its hooked tensors
    mine = {s.attribute: s for s in node.saved if not s.attribute.startswith("checkpoint input")}
    assert set(mine) == set(truth), (fn.name(), mine, truth)
    for attribute, value in truth.items():
        saved = mine[attribute]
        if value == ("hooked",):
            assert saved.hooked and saved.saved_version is None
        elif isinstance(value, tuple):
            assert saved.stale and saved.current_version == value[1]
        else:
            assert saved.saved_version == saved.current_version == value._version
            assert saved.shape == tuple(value.shape) and saved.dtype == value.dtype
            if value.requires_grad:  # (a non-differentiable output, sort's indices, has no grad_fn)
                assert saved.is_output == (value.grad_fn is fn)


def check_structure(t: torch.Tensor, names: dict | None = None, max_nodes: int = 10**9) -> Graph:
    fns, edges, depth = torch_walk(t)
    graph = autograd_graph(t, names=names, max_nodes=max_nodes)
    assert graph.root == 0 and graph.nodes[0].id == 0
    assert graph.total_nodes == len(fns)
    kept = min(max_nodes, len(fns))
    assert len(graph.nodes) == kept
    assert graph.truncated == (len(fns) > max_nodes)
    assert [n.id for n in graph.nodes] == list(range(kept))
    assert Counter(graph.edges) == Counter((a, b) for a, b in edges if a < kept and b < kept)
    if graph.truncated:  # the kept ones are the nearest the output
        assert max(depth[:kept]) <= min(depth[kept:])
    assert graph.nodes[0].kind == ("leaf" if t.is_leaf and t.requires_grad else "output")
    assert graph.nodes[0].shape == tuple(t.shape)
    by_id = {id(v): k for k, v in (names or {}).items()}
    for node, fn in zip(graph.nodes[1:], fns[1:]):
        assert node.name == ("AccumulateGrad" if fn.name().endswith("AccumulateGrad") else fn.name())
        if node.name == "AccumulateGrad":
            assert node.kind == "leaf"
            assert node.shape == tuple(fn.variable.shape)
            if id(fn.variable) in by_id:
                assert node.label == by_id[id(fn.variable)]
            else:
                assert node.label not in by_id.values()
            assert node.saved == ()
        else:
            assert node.kind == "backward" and node.label == fn.name()
            hidden = fn.name().endswith("CopySlices") or type(fn).__name__ == "CppFunction"  # foreach
            if not hidden and "saved_tensors" not in dir(fn):  # custom Functions: tested apart
                check_saved_against_torch(node, fn)
    return graph


@settings(max_examples=60)
@given(programs(), st.integers(1, 40))
def test_structure_matches_next_functions_walk(program, max_nodes):
    run = run_program(program)
    a, b = run.leaves
    names = {"a": a, "b": b}
    full = check_structure(run.out, names=names)
    small = check_structure(run.out, names=names, max_nodes=max_nodes)
    assert small.nodes == full.nodes[: len(small.nodes)]
    # one AccumulateGrad per distinct leaf that requires grad and is reachable: counts leaves, not objects
    leaf_nodes = [n for n in full.nodes if n.kind == "leaf"]
    reachable_leaves = {n.label for n in leaf_nodes}
    assert len(leaf_nodes) == len(reachable_leaves) and reachable_leaves <= {"a", "b"}


def test_seed_example_log_mul_sin():
    x1 = torch.tensor(2.0, requires_grad=True)
    x2 = torch.tensor(3.0, requires_grad=True)
    z = torch.log(x1 * x2) * torch.sin(x2)
    graph = check_structure(z, names={"x1": x1, "x2": x2})
    assert Counter(n.name for n in graph.nodes[1:]) == Counter(
        {"MulBackward0": 2, "LogBackward0": 1, "SinBackward0": 1, "AccumulateGrad": 2}
    )
    assert {n.label for n in graph.nodes if n.kind == "leaf"} == {"x1", "x2"}
    assert math.isclose(float(graph.nodes[0].value), z.item(), rel_tol=1e-3)
    assert all(n.grad is None for n in graph.nodes if n.kind == "leaf")
    assert inplace_hazards(z) == []
    z.backward()
    after = autograd_graph(z, names={"x1": x1, "x2": x2})
    for leaf, tensor in ((after.find("x1")[0], x1), (after.find("x2")[0], x2)):
        assert math.isclose(float(leaf.grad), tensor.grad.item(), rel_tol=1e-3)
        assert math.isclose(float(leaf.value), tensor.item(), rel_tol=1e-3)
    # and every saved tensor is now freed
    saved = [s for n in after.nodes for s in n.saved]
    assert saved and all(s.freed and s.saved_version is None for s in saved)


def test_leaf_labels_from_named_parameters():
    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Linear(3, 4), torch.nn.Tanh(), torch.nn.Linear(4, 2))
    x = torch.randn(5, 3)
    loss = model(x).pow(2).mean()
    names = dict(model.named_parameters())
    graph = check_structure(loss, names=names)
    leaves = {n.label: n for n in graph.nodes if n.kind == "leaf"}
    assert set(leaves) == set(names)
    for name, param in names.items():
        assert leaves[name].shape == tuple(param.shape)
    # unnamed: labels fall back to something that is not a parameter name
    assert not {n.label for n in autograd_graph(loss).nodes} & set(names)


def test_forward_op_and_find():
    x = torch.randn(3, requires_grad=True)
    y = x.exp()
    graph = autograd_graph(y, names={"x": x})
    (exp_node,) = graph.find("ExpBackward0")
    assert exp_node.forward_op == "exp" and exp_node.name == y.grad_fn.name()
    assert graph.find("x")[0].forward_op is None and graph.node(0).forward_op is None


def test_saved_versions_equal_tensor_versions():
    """saved_version is the version at save time, current_version the tensor's ._version now."""
    x = torch.randn(2, 3, requires_grad=True)
    c = torch.randn(2, 3)
    y = x.clone()  # CloneBackward0 saves nothing
    y.add_(1)
    y.add_(2)  # (an in-place mul_ would add a second MulBackward0)
    c.add_(1)
    s = torch.sin(y)  # saves y at its current version
    m = s * c  # saves c (not s: c needs no gradient)
    e = m.exp()  # saves its result
    out = e.sum()
    versions_at_save = {"y": y._version, "c": c._version, "e": e._version}

    def saved_of(graph, name):
        (node,) = graph.find(name)
        return {s.attribute: s for s in node.saved}

    graph = autograd_graph(out)
    assert saved_of(graph, "SinBackward0")["self"].saved_version == y._version == versions_at_save["y"]
    mul = saved_of(graph, "MulBackward0")
    assert mul["other"].saved_version == mul["other"].current_version == c._version
    exp_result = saved_of(graph, "ExpBackward0")["result"]
    assert exp_result.is_output and exp_result.saved_version == e._version
    assert all(not s.stale for n in graph.nodes for s in n.saved)

    y.add_(1)
    c.mul_(3)
    c.mul_(3)
    e.sigmoid_()
    graph = autograd_graph(out)
    sin = saved_of(graph, "SinBackward0")["self"]
    assert (sin.saved_version, sin.current_version) == (versions_at_save["y"], y._version)
    other = saved_of(graph, "MulBackward0")["other"]
    assert (other.saved_version, other.current_version) == (versions_at_save["c"], c._version)
    exp_result = saved_of(graph, "ExpBackward0")["result"]
    assert (exp_result.saved_version, exp_result.current_version) == (versions_at_save["e"], e._version)
    hazards = inplace_hazards(out)
    assert {(h.saved_version, h.current_version) for h in hazards} == {
        (versions_at_save["y"], y._version),
        (versions_at_save["c"], c._version),
        (versions_at_save["e"], e._version),
    }
    for hazard in hazards:  # node_id points at the node that saved it
        assert autograd_graph(out, max_nodes=10**6).node(hazard.node_id).name == hazard.node
    assert versions_in(backward_error(out)) in {(h.current_version, h.saved_version) for h in hazards}


@settings(max_examples=40)
@given(programs())
def test_freed_after_backward_and_kept_with_retain_graph(program):
    run = run_program(program)
    if inplace_hazards(run.out):
        event("hazard: skipped")
        return
    before = autograd_graph(run.out)
    assert not any(s.freed for n in before.nodes for s in n.saved)
    assert backward_error(run.out, retain_graph=True) is None
    kept = autograd_graph(run.out)
    assert kept.nodes[1:] == tuple(
        GraphNode(n.id, n.name, n.kind, n.label, n.shape, n.saved, n.value, k.grad, n.kept)
        for n, k in zip(before.nodes[1:], kept.nodes[1:])
    )  # only the leaves' grads changed (a reentrant checkpoint keeps its RNG state on ctx: before and after)
    assert backward_error(run.out) is None
    freed = autograd_graph(run.out)
    saved = [s for n in freed.nodes for s in n.saved]
    assert all(s.freed and s.saved_version is None and s.current_version is None for s in saved)
    if any(n.saved for n in before.nodes):
        event("had saved tensors")
        assert saved


# ---------------------------------------------------------------------------------------------------------
# 4. Custom autograd.Function: a saved input and a saved output edited in place
# ---------------------------------------------------------------------------------------------------------


class ExpSavingBoth(torch.autograd.Function):
    """exp, saving (input, output) or (output, input); ``forward_edits`` in-place edits of the output
    inside forward, so that it is saved at a version other than 0."""

    @staticmethod
    def forward(ctx, a, output_first, forward_edits):
        out = a.exp()
        for _ in range(forward_edits):
            out.mul_(1.0)
        ctx.output_first = output_first
        ctx.save_for_backward(*((out, a) if output_first else (a, out)))
        return out

    @staticmethod
    def backward(ctx, grad):
        saved = ctx.saved_tensors
        out, a = saved if ctx.output_first else saved[::-1]
        return grad * out + 0 * a, None, None


def edited_exp_saving_both(output_first, forward_edits, input_edits, output_edits):
    """``ExpSavingBoth`` applied to a non-leaf ``a``, then ``a`` and the output edited in place: ``(a, out, loss,
    the versions save_for_backward recorded)``."""
    x = torch.randn(3, requires_grad=True)
    a = x * 1
    out = ExpSavingBoth.apply(a, output_first, forward_edits)
    loss = (out * 1).sum()
    saved_at = (a._version, out._version)  # what save_for_backward recorded
    for _ in range(input_edits):
        a.add_(1)
    for _ in range(output_edits):
        out.mul_(2)
    return a, out, loss, saved_at


@pytest.mark.parametrize("forward_edits", [0, 1])
@pytest.mark.parametrize("output_first", [False, True])
@pytest.mark.parametrize("input_edits", [0, 1, 3])
@pytest.mark.parametrize("output_edits", [0, 1, 2])
def test_custom_function_hazards_iff_backward_raises(forward_edits, output_first, input_edits, output_edits):
    a, out, loss, (input_saved_at, output_saved_at) = edited_exp_saving_both(
        output_first, forward_edits, input_edits, output_edits
    )
    hazards = inplace_hazards(loss)
    (node,) = autograd_graph(loss).find("ExpSavingBothBackward")
    error = backward_error(loss)

    assert (hazards == []) == (error is None)
    assert (error is None) == (input_edits == 0 and output_edits == 0)  # the scenario is what it claims
    if error is not None:
        assert versions_in(error) in {(h.current_version, h.saved_version) for h in hazards}
    for hazard in hazards:
        assert hazard.node == "ExpSavingBothBackward" and "save_for_backward" in hazard.what

    output_saved = node.saved[0 if output_first else 1]
    input_saved = node.saved[1 if output_first else 0]
    assert (output_saved.current_version, input_saved.current_version) == (out._version, a._version)
    if not UNPACKS_ALONE:  # torch 2.11: only the node unpacks, so per-tensor facts are known for the stale one only
        assert input_saved.saved_version in (None, input_saved_at) and not input_saved.is_output
        return
    assert output_saved.is_output and not input_saved.is_output
    # a saved input can always be checked on its own
    assert (input_saved.saved_version, input_saved.current_version) == (input_saved_at, a._version)
    if input_edits and not output_first:  # backward stops at the input: the output's saved version is unknowable
        assert output_saved.saved_version is None and not output_saved.stale and output_saved.note
    else:
        assert (output_saved.saved_version, output_saved.current_version) == (output_saved_at, out._version)


@pytest.mark.parametrize("output_first", [False, True])
def test_custom_function_applied_to_its_own_output(output_first):
    """The stale input of the outer call is an output of the inner call: autograd's message says
    "output 0 of ExpSavingBoth" for it too, so the message alone cannot tell input from output."""
    x = torch.randn(3, requires_grad=True)
    inner = ExpSavingBoth.apply(x * 1, output_first, 0)
    outer = ExpSavingBoth.apply(inner, output_first, 0)
    with torch.no_grad():  # (no_grad keeps inner's grad_fn: the message still names ExpSavingBoth)
        inner.add_(1)  # stale in both nodes: the inner's saved output, the outer's saved input
    hazards = inplace_hazards(outer)
    error = backward_error(outer)
    assert error is not None and versions_in(error) in {(h.current_version, h.saved_version) for h in hazards}
    outer_node, inner_node = autograd_graph(outer).find("ExpSavingBothBackward")
    outer_out, outer_in = outer_node.saved if output_first else outer_node.saved[::-1]
    inner_out, inner_in = inner_node.saved if output_first else inner_node.saved[::-1]
    assert (outer_in.saved_version, outer_in.current_version) == (0, inner._version)
    assert (inner_out.saved_version, inner_out.current_version) == (0, inner._version)
    assert not inner_in.stale
    if output_first:  # the outer output comes first and is not stale: known, since backward passed it
        assert (outer_out.saved_version, outer_out.current_version) == (outer._version, outer._version)


def test_custom_function_without_edits_is_clean_and_outputs_are_marked():
    x = torch.randn(3, requires_grad=True)
    out = ExpSavingBoth.apply(x * 1, False, 0)
    (node,) = autograd_graph(out).find("ExpSavingBothBackward")
    assert [s.is_output for s in node.saved] == [False, True]
    assert [s.saved_version for s in node.saved] == [0, out._version]


class SavesButNeverReads(torch.autograd.Function):
    @staticmethod
    def forward(ctx, a):
        ctx.save_for_backward(a)
        return a * 2

    @staticmethod
    def backward(ctx, grad):
        return grad * 2  # never reads ctx.saved_tensors


def test_custom_function_that_never_reads_its_saved_tensors_is_the_documented_exception():
    """graph.py's docstring: such a Function's stale saved tensors are reported although backward,
    which never unpacks them, does not raise. If torch or the library changes, so must the docstring."""
    x = torch.randn(3, requires_grad=True)
    a = x * 1
    out = SavesButNeverReads.apply(a)
    a.add_(1)
    assert [(h.saved_version, h.current_version) for h in inplace_hazards(out)] == [(0, a._version)]
    (hazard,) = inplace_hazards(out)
    assert hazard.custom_function == "SavesButNeverReads"  # and the explanation says the error depends on it
    assert hazard.explanation.endswith(
        "when it reaches SavesButNeverReadsBackward if SavesButNeverReads.backward reads ctx.saved_tensors "
        "(a backward that never reads them runs fine)."
    )
    assert backward_error(out) is None


def test_a_built_in_hazard_raises_when_backward_reaches_its_node_whatever_gradient_is_asked_for():
    """The hazard explanation's "raises ... when it reaches MulBackward0": a built-in node unpacks every saved
    tensor, even one the asked gradient does not need; a node backward never reaches raises nothing."""
    x, w = torch.randn(3, requires_grad=True), torch.randn(3, requires_grad=True)
    a, b = x * 1, w * 1
    z = a * b  # MulBackward0 saves a (for b's gradient) and b (for a's)
    b.add_(1)
    (hazard,) = inplace_hazards(z)
    assert hazard.custom_function is None and custom_function_saver(hazard.node, "other") is None
    assert hazard.explanation.endswith(
        "so backward() raises 'modified by an inplace operation' when it reaches MulBackward0."
    )
    with pytest.raises(RuntimeError, match=INPLACE_ERROR):  # w's gradient needs only a, not the stale b
        torch.autograd.grad(z.sum(), [w], retain_graph=True)
    e = w.exp()
    e.add_(1)
    out = x * 2 + e
    assert [h.node for h in inplace_hazards(out)] == ["ExpBackward0"]
    torch.autograd.grad(out.sum(), [x])  # never reaches ExpBackward0: no error


def test_custom_function_saver_names_a_custom_function_even_inside_copy_slices():
    assert custom_function_saver("TwoBackward", "saved_tensors[1]") == "Two"
    assert (
        custom_function_saver("torch::autograd::CopySlices", "wrapped in-place op: TwoBackward saved_tensors[0]")
        == "Two"
    )
    assert custom_function_saver("ExpBackward0", "result") is None
    with pytest.raises(TypeError, match="node"):
        custom_function_saver(None, "self")
    with pytest.raises(TypeError, match="attribute"):
        custom_function_saver("ExpBackward0", 3)


class SavedTensorOfTorch211:
    """torch 2.11's ``SavedTensor``: ``data`` and ``unpack_hook``, and no ``unpack()`` (2.13 added it): only the
    node that saved a tensor can unpack it there, all its saved tensors at once."""

    def __init__(self, raw):
        self.raw = raw

    data = property(lambda self: self.raw.data)
    unpack_hook = property(lambda self: self.raw.unpack_hook)


def as_in_torch_2_11(monkeypatch) -> None:
    """Every saved tensor the library reads from a node comes as torch 2.11 gives it."""
    original = graph_module._raw_attribute

    def as_2_11(item):
        return SavedTensorOfTorch211(item) if isinstance(item, torch._C._autograd.SavedTensor) else item

    def raw_attribute(fn, attr):
        raw, error = original(fn, attr)
        raw = type(raw)(map(as_2_11, raw)) if isinstance(raw, (list, tuple)) else as_2_11(raw)
        return raw, error

    monkeypatch.setattr(graph_module, "_raw_attribute", raw_attribute)


class ExpSavingOne(torch.autograd.Function):
    """exp saving its output (``save_output``) or its input, and nothing else."""

    @staticmethod
    def forward(ctx, a, save_output):
        out = a.exp()
        ctx.save_for_backward(out if save_output else a)
        return out

    @staticmethod
    def backward(ctx, grad):
        (saved,) = ctx.saved_tensors
        return grad * saved, None


def graphs_with_one_saved_tensor_each():
    """(name, out) for graphs whose nodes save one tensor, or one list of one: stale or not."""
    for save_output in (False, True):
        for stale in (False, True):
            x = torch.randn(3, requires_grad=True)
            a = x * 1
            out = ExpSavingOne.apply(a, save_output)
            loss = (out * 1).sum()
            if stale:
                (out if save_output else a).mul_(2)
            yield f"custom Function saving its {'output' if save_output else 'input'}, stale {stale}", loss
    for stale in (False, True):
        index = torch.tensor([0, 2])
        loss = (torch.randn(4, requires_grad=True) * 2)[index].sum()  # IndexBackward0 saves a list: [index]
        if stale:
            index.add_(0)
        yield f"advanced indexing, its index stale {stale}", loss


def test_saved_tensors_read_as_torch_2_11_gives_them_say_what_torch_2_13_says(monkeypatch):
    """torch 2.11 has no SavedTensor.unpack(): where a node saved one tensor, its own unpack is that tensor's,
    and the graph, hazards and versions are the same (autograd_graph raised AttributeError there)."""
    for name, loss in graphs_with_one_saved_tensor_each():
        native = autograd_graph(loss), inplace_hazards(loss)
        with monkeypatch.context() as patched:
            as_in_torch_2_11(patched)
            as_2_11 = autograd_graph(loss), inplace_hazards(loss)
        assert as_2_11 == native, name


@pytest.mark.parametrize("output_first", [False, True])
@pytest.mark.parametrize("input_edits", [0, 1])
@pytest.mark.parametrize("output_edits", [0, 1])
def test_two_saved_tensors_read_as_torch_2_11_gives_them_name_the_one_backward_raises_at(
    monkeypatch, output_first, input_edits, output_edits
):
    """Read as torch 2.11 gives them, two saved tensors of one node cannot be unpacked one by one: a hazard still
    exists iff backward raises, names the tensor it raises at, and claims nothing torch 2.13 does not see."""
    a, out, loss, _ = edited_exp_saving_both(output_first, 0, input_edits, output_edits)
    native = inplace_hazards(loss)
    (native_node,) = autograd_graph(loss).find("ExpSavingBothBackward")
    with monkeypatch.context() as patched:
        as_in_torch_2_11(patched)
        hazards = inplace_hazards(loss)
        (node,) = autograd_graph(loss).find("ExpSavingBothBackward")
    error = backward_error(loss)
    assert (hazards == []) == (error is None)
    if error is not None:
        assert versions_in(error) in {(h.current_version, h.saved_version) for h in hazards}
    versions = {(h.saved_version, h.current_version) for h in native}
    assert all((h.saved_version, h.current_version) in versions for h in hazards)
    named = {h.what for h in native}  # or "one of saved_tensors[0], saved_tensors[1] (whichever is output 0 ...)"
    assert all(h.what in named or h.what.startswith("one of ") for h in hazards)
    for saved, truth in zip(node.saved, native_node.saved):  # what is said is true; the rest is said unknown
        assert saved.is_output <= truth.is_output
        assert saved.saved_version in (None, truth.saved_version)
        assert saved.current_version == truth.current_version


# ---------------------------------------------------------------------------------------------------------
# 4b. Saved tensors that are not plain attributes: CopySlices, saved_tensors_hooks
# ---------------------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "edit_through_view, hidden_saves",
    [
        (lambda y, w: y[0].exp_(), "y[0] after exp_"),  # the wrapped ExpBackward0 saves its result
        (lambda y, w: y[1].mul_(w[1]), "w[1]"),  # the wrapped MulBackward0 saves w[1]
    ],
)
def test_inplace_edit_through_a_view_hides_saved_tensors_in_copy_slices(edit_through_view, hidden_saves):
    x = torch.randn(3, 3, requires_grad=True)
    y = x * 1
    w = x.sin()
    edit_through_view(y, w)
    assert y.grad_fn.name().endswith("CopySlices")
    loss = y.sum()
    assert inplace_hazards(loss) == []
    hooks = []
    y.grad_fn.register_hook(lambda *args: hooks.append("post"))
    y.grad_fn.register_prehook(lambda *args: hooks.append("pre"))
    y.add_(1) if "exp_" in hidden_saves else w.add_(1)
    (hazard,) = inplace_hazards(loss)
    assert hazard.node.endswith("CopySlices") and "view" in hazard.explanation
    assert hooks == []  # looking did not run the node's hooks
    assert versions_in(backward_error(loss)) == (hazard.current_version, hazard.saved_version)
    assert hooks == ["pre"]  # backward did (and stopped inside it)


def test_copy_slices_inspection_leaves_backward_and_grads_alone():
    def build():
        torch.manual_seed(3)
        x = torch.randn(3, 3, requires_grad=True)
        y = x * 2
        y[0].sigmoid_()  # (a second edit of y would make the saved sigmoid result stale)
        v = x * 3
        v.t()[1].mul_(x[2])
        return x, (y * v).sum()

    x1, loss1 = build()
    x2, loss2 = build()
    graph = autograd_graph(loss2)
    assert len([n for n in graph.nodes if n.name.endswith("CopySlices")]) == 2
    assert inplace_hazards(loss2) == []
    loss1.backward()
    loss2.backward()
    assert torch.equal(x1.grad, x2.grad)
    freed = autograd_graph(loss2)
    assert all(s.freed for n in freed.nodes for s in n.saved)
    assert any(n.saved for n in freed.nodes if n.name.endswith("CopySlices"))  # both saved something


def test_saved_tensors_hooks_are_listed_not_unpacked():
    calls = []

    def pack(t):
        calls.append("pack")
        return t

    def unpack(t):
        calls.append("unpack")
        return t

    x = torch.randn(3, requires_grad=True)
    with torch.autograd.graph.saved_tensors_hooks(pack, unpack):
        y = x * 1
        z = torch.sin(y)
    (node,) = autograd_graph(z).find("SinBackward0")
    assert [s.hooked for s in node.saved] == [True] and node.saved[0].saved_version is None
    y.add_(1)  # autograd does not check versions of hooked tensors ...
    assert inplace_hazards(z) == []
    assert "unpack" not in calls
    assert backward_error(z) is None  # ... and backward agrees
    assert "unpack" in calls


def _states(t) -> list[tuple[str, str, str]]:
    return [(n.name, s.attribute, s.state) for n in autograd_graph(t).nodes for s in n.saved]


def test_saved_tensor_state_ok_then_freed_by_backward():
    x = torch.ones(3, requires_grad=True)
    loss = (x.exp() * 3).sum()
    assert _states(loss) == [("MulBackward0", "other", "ok"), ("ExpBackward0", "result", "ok")]
    assert backward_error(loss) is None
    assert _states(loss) == [("MulBackward0", "other", "freed"), ("ExpBackward0", "result", "freed")]


def test_saved_tensor_state_stale_exactly_when_backward_refuses():
    x = torch.ones(3, requires_grad=True)
    y = x.exp()
    loss = y.sum()
    y.add_(1)
    assert _states(loss) == [("ExpBackward0", "result", "stale")]
    assert INPLACE_ERROR in str(backward_error(loss))


def test_saved_tensor_state_hooked_under_saved_tensors_hooks_even_when_edited():
    x = torch.ones(3, requires_grad=True)
    with torch.autograd.graph.saved_tensors_hooks(lambda t: t, lambda t: t):
        y = x * 1
        z = y.sin()
    y.add_(1)  # the hooks skip the version check: not stale
    assert [state for state in _states(z) if state[0] == "SinBackward0"] == [("SinBackward0", "self", "hooked")]


def test_saved_tensor_state_unknown_behind_an_earlier_stale_output():
    class TwoOutputs(torch.autograd.Function):
        @staticmethod
        def forward(ctx, a):
            doubled, tripled = a * 2, a * 3
            ctx.save_for_backward(doubled, tripled)
            return doubled, tripled

        @staticmethod
        def backward(ctx, grad_doubled, grad_tripled):
            _ = ctx.saved_tensors  # reading them is the version check
            return grad_doubled * 2 + grad_tripled * 3

    x = torch.ones(3, requires_grad=True)
    doubled, tripled = TwoOutputs.apply(x)
    doubled.add_(1)
    tripled.add_(1)
    states = [state for name, _, state in _states(doubled.sum() + tripled.sum()) if name == "TwoOutputsBackward"]
    assert states == ["stale", "unknown"]  # backward stops at the first: the second's saved version is not read


# ---------------------------------------------------------------------------------------------------------
# 5. Size caps
# ---------------------------------------------------------------------------------------------------------

CHAIN = 10_000


def test_long_chain_is_truncated_but_counted():
    x = torch.randn(4, requires_grad=True)
    y = x
    for _ in range(CHAIN):
        y = y * 1.0001
    fns, _, _ = torch_walk(y)
    graph = autograd_graph(y)
    assert graph.truncated and len(graph.nodes) == DEFAULT_MAX_NODES
    assert graph.total_nodes == len(fns) == CHAIN + 2  # the output, 10,000 MulBackward0, one AccumulateGrad
    assert all(a < DEFAULT_MAX_NODES and b < DEFAULT_MAX_NODES for a, b in graph.edges)
    assert len(graph.edges) == DEFAULT_MAX_NODES - 1
    assert len(repr(graph)) < 300 and str(CHAIN + 2) in repr(graph)


def test_hazard_at_the_far_end_of_a_long_chain():
    x = torch.randn(4, requires_grad=True)
    e = (x * 1).exp()  # saves its result, deep in the graph
    y = e
    for _ in range(CHAIN):
        y = y + 1
    e.add_(1)
    hazards = inplace_hazards(y)
    assert [(h.node, h.saved_version, h.current_version) for h in hazards] == [("ExpBackward0", 0, e._version)]
    assert hazards[0].node_id > DEFAULT_MAX_NODES  # beyond what autograd_graph shows by default
    assert versions_in(backward_error(y)) == (e._version, 0)


# ---------------------------------------------------------------------------------------------------------
# 6. Bad input and unusual tensors
# ---------------------------------------------------------------------------------------------------------

_X = torch.randn(3, requires_grad=True)


@pytest.mark.parametrize(
    "kwargs, argument",
    [
        ({"t": None}, "t"),
        ({"t": [1, 2]}, "t"),
        ({"t": 3.0}, "t"),
        ({"t": torch.eye(3).to_sparse()}, "t"),
        ({"t": _X * 2, "names": [_X]}, "names"),
        ({"t": _X * 2, "names": {"x": 3}}, "names"),
        ({"t": _X * 2, "names": {1: _X}}, "names"),
        ({"t": _X * 2, "max_nodes": 0}, "max_nodes"),
        ({"t": _X * 2, "max_nodes": -5}, "max_nodes"),
        ({"t": _X * 2, "max_nodes": "5"}, "max_nodes"),
        ({"t": _X * 2, "max_nodes": True}, "max_nodes"),
        ({"t": _X * 2, "max_nodes": 5.0}, "max_nodes"),
    ],
)
def test_autograd_graph_rejects_bad_arguments_naming_them(kwargs, argument):
    with pytest.raises((TypeError, ValueError)) as info:
        autograd_graph(**kwargs)
    assert re.search(rf"\b{argument}\b", str(info.value)), str(info.value)


def _nested():
    with warnings.catch_warnings():  # "prototype stage" (strided nested tensors)
        warnings.simplefilter("ignore", UserWarning)
        return torch.nested.nested_tensor([torch.randn(2), torch.randn(3)])


@pytest.mark.parametrize("bad", [None, [1, 2], torch.eye(3).to_sparse(), "nested"])
def test_inplace_hazards_rejects_bad_arguments_naming_them(bad):
    if bad == "nested":
        bad = _nested()
    with pytest.raises((TypeError, ValueError)) as info:
        inplace_hazards(bad)
    assert re.search(r"\bt\b", str(info.value)), str(info.value)


def test_autograd_graph_rejects_nested_tensors_naming_t():
    for nested in (_nested(), torch.nested.nested_tensor([torch.randn(2), torch.randn(3)], layout=torch.jagged)):
        with pytest.raises(ValueError, match=r"\bt\b"):
            autograd_graph(nested)


def test_max_nodes_one_keeps_only_the_output():
    x = torch.randn(3, requires_grad=True)
    y = x.exp().sin()
    graph = check_structure(y, max_nodes=1)
    assert len(graph.nodes) == 1 and graph.edges == () and graph.total_nodes == 4 and graph.truncated


def test_tensors_without_grad_0_dim_and_leaves():
    plain = torch.ones(3)
    graph = check_structure(plain)
    assert graph.total_nodes == 1 and not graph.truncated and inplace_hazards(plain) == []
    with torch.no_grad():
        made = torch.randn(3, requires_grad=True) * 2
    assert inplace_hazards(made) == [] and len(autograd_graph(made).nodes) == 1

    leaf = torch.tensor(2.0, requires_grad=True)  # 0-dim leaf: its graph is itself
    graph = autograd_graph(leaf, names={"w": leaf})
    assert len(graph.nodes) == 1 and graph.nodes[0].kind == "leaf" and graph.nodes[0].label == "w"
    assert graph.nodes[0].shape == () and math.isclose(float(graph.nodes[0].value), leaf.item())
    assert inplace_hazards(leaf) == []

    scalar = leaf.exp()  # 0-dim result saved by exp
    check_structure(scalar)
    scalar2 = scalar * 1
    scalar.add_(1)
    hazards = inplace_hazards(scalar2)
    assert [(h.node, h.shape) for h in hazards] == [("ExpBackward0", ())]
    assert versions_in(backward_error(scalar2)) == (hazards[0].current_version, hazards[0].saved_version)

    ints = torch.arange(5)
    assert inplace_hazards(ints) == [] and autograd_graph(ints).nodes[0].value is not None


def test_meta_tensors():
    x = torch.randn(3, 4, device="meta", requires_grad=True)
    c = torch.randn(3, 4, device="meta")
    y = (x * c).exp()
    out = y.sum()
    graph = check_structure(out, names={"x": x})
    assert graph.find("x")[0].shape == (3, 4)
    assert inplace_hazards(out) == []
    c.add_(1)
    y.mul_(2)
    hazards = inplace_hazards(out)
    assert {h.node for h in hazards} == {"MulBackward0", "ExpBackward0"}
    error = backward_error(out)  # meta backward still checks versions
    assert error is not None and versions_in(error) in {(h.current_version, h.saved_version) for h in hazards}

    # an in-place edit through a view of a meta tensor: the CopySlices node is called on meta too
    w = x * 1
    w[0].exp_()
    loss = w.sum()
    assert inplace_hazards(loss) == [] and backward_error(loss, retain_graph=True) is None
    w.add_(1)
    hazards = inplace_hazards(loss)
    assert len(hazards) == 1 and versions_in(backward_error(loss)) == (
        hazards[0].current_version,
        hazards[0].saved_version,
    )


# ---------------------------------------------------------------------------------------------------------
# 7. Text: repr and explanations
# ---------------------------------------------------------------------------------------------------------


def test_repr_is_short_for_a_huge_graph():
    x = torch.randn(2, requires_grad=True)
    y = x
    for _ in range(CHAIN):
        y = y + 1
    for max_nodes in (DEFAULT_MAX_NODES, 10**6):
        text = repr(autograd_graph(y, max_nodes=max_nodes))
        assert len(text) < 300, text


def test_hazard_explanation_names_node_and_versions():
    x = torch.randn(3, requires_grad=True)
    y = x * 1
    for _ in range(4):
        y.add_(1)
    s = torch.sin(y)  # saves y at version 4 ...
    saver = s.grad_fn.name()
    saved_at = y._version
    for _ in range(7):
        y.mul_(1.5)  # ... which is then edited 7 times more
    now = y._version
    (hazard,) = inplace_hazards(s)
    assert isinstance(hazard, Hazard) and hazard.node == saver
    assert (hazard.saved_version, hazard.current_version) == (saved_at, now)
    text = hazard.explanation
    assert hazard.node in text
    assert re.search(rf"\bversion {saved_at}\b", text) and re.search(rf"\bversion {now}\b", text), text
    assert str(hazard) == text
    assert f"a float32 tensor of shape {tuple(y.shape)}" in text  # Python's own spelling: (3,)
    assert versions_in(backward_error(s)) == (now, saved_at)


def test_hazard_explanation_calls_a_zero_dim_tensor_a_scalar():
    x = torch.tensor(2.0, requires_grad=True, dtype=torch.float64)
    e = x.exp()
    e.add_(1)
    (hazard,) = inplace_hazards(e * 1)
    assert "(a float64 scalar)" in hazard.explanation


# ---------------------------------------------------------------------------------------------------------
# 8. The helpers other modules use: autograd's messages, grad_fn_of, refused_graph, describe_saved
# ---------------------------------------------------------------------------------------------------------


def test_error_versions_and_shape_read_autograds_message():
    x = torch.ones(2, 3, requires_grad=True)
    y = x.exp()
    y.add_(1)
    y.add_(1)
    message = backward_error(y)
    assert VERSION_ERROR.search(message)
    assert error_versions(message) == (2, 0) == error_versions(RuntimeError(message))
    assert error_shape_and_dtype(message) == ((2, 3), torch.float32)
    assert error_versions("another error") is None and error_shape_and_dtype("another error") == (None, None)


@pytest.mark.parametrize(
    "dtype",
    [torch.float16, torch.bfloat16, torch.bool, torch.complex64, torch.complex128, torch.int8, torch.uint16],
)
def test_error_shape_and_dtype_read_every_dtype_as_torch_names_it(dtype):
    # torch writes "[torch.HalfTensor [2, 3]]" for some dtypes, "[CPUComplexFloatType [2, 3]]" for others
    w = torch.zeros(2, 3, dtype=dtype)
    out = SavesW.apply(torch.ones(2, requires_grad=True), w)
    w.fill_(1)
    message = backward_error(out)
    assert error_shape_and_dtype(message) == ((2, 3), dtype), message


def test_saved_storage_nbytes_is_the_storage_the_graph_keeps_not_the_elements():
    x = torch.randn(1, requires_grad=True)
    e = x.expand(1000, 1000)
    (mul,) = [n for n in autograd_graph(e * e).nodes if n.name == "MulBackward0"]
    saved = mul.saved
    assert {(s.nbytes, s.storage_nbytes) for s in saved} == {(4_000_000, e.untyped_storage().nbytes())}
    assert e.untyped_storage().nbytes() == 4
    big = torch.randn(1000, requires_grad=True) * 1
    part = big[:2]
    (sin,) = [n for n in autograd_graph(part.sin()).nodes if n.name == "SinBackward0"]
    assert (sin.saved[0].nbytes, sin.saved[0].storage_nbytes) == (8, part.untyped_storage().nbytes()) == (8, 4000)
    out = part.sin()
    out.sum().backward()
    assert all(s.storage_nbytes is None for n in autograd_graph(out).nodes for s in n.saved)  # freed


def test_both_freed_constants_are_parts_of_autograds_second_backward_error():
    x = torch.ones(2, requires_grad=True)
    loss = x.exp().sum()
    loss.backward()
    with pytest.raises(RuntimeError) as second:
        loss.backward()
    assert FREED_ERROR_SECOND_BACKWARD in str(second.value) and FREED_ERROR_ALREADY_FREED in str(second.value)
    with pytest.raises(RuntimeError) as read:
        loss.grad_fn.next_functions[0][0]._saved_result  # reading a freed saved tensor: the second part only
    assert FREED_ERROR_ALREADY_FREED in str(read.value)


def test_grad_fn_of_returns_autograds_reason_instead_of_raising():
    x = torch.ones(4, requires_grad=True) * 1
    first, _ = x.split(2)
    assert grad_fn_of(x) == (x.grad_fn, None)
    x.add_(1)  # the base of split()'s outputs changed in place: their grad_fn cannot be built
    fn, reason = grad_fn_of(first)
    assert fn is None and "modified inplace" in reason
    graph = refused_graph(first, reason)
    assert [n.kind for n in graph.nodes] == ["output"] and reason in graph.unseen[0]
    with pytest.raises(TypeError, match="tensor must be a torch.Tensor"):
        grad_fn_of([1.0])
    with pytest.raises(TypeError, match="reason must be a str"):
        refused_graph(first, None)


def test_describe_saved_names_the_saved_tensor_and_checks_its_arguments():
    x = torch.ones(3, requires_grad=True)
    graph = autograd_graph(x.exp() * x)
    (mul,) = graph.find("MulBackward0")
    (exp,) = graph.find("ExpBackward0")
    assert describe_saved(exp, exp.saved[0]) == "the result of exp"
    assert {describe_saved(mul, s) for s in mul.saved} == {"input 'self' of mul", "input 'other' of mul"}
    with pytest.raises(TypeError, match="node must be a GraphNode"):
        describe_saved("ExpBackward0", exp.saved[0])
    with pytest.raises(TypeError, match="saved must be a SavedTensor"):
        describe_saved(exp, None)


# ---------------------------------------------------------------------------------------------------------
# which tensor a saved tensor is (names), and which in-place write made it stale
# ---------------------------------------------------------------------------------------------------------


def _saved(graph, node_name: str, attribute: str):
    return next(s for n in graph.find(node_name) for s in n.saved if s.attribute == attribute)


def test_saved_tensors_are_named_by_the_tensor_over_the_same_elements():
    x = torch.tensor([1.0, 2.0, 3.0], requires_grad=True)
    b = x.exp()
    view, copy = b[:2], b.clone()
    graph = autograd_graph((b * x).sum(), names={"x": x, "b": b, "view": view, "copy": copy})
    assert _saved(graph, "ExpBackward0", "result").name == "b"  # exp saved its output: b itself
    assert _saved(graph, "MulBackward0", "self").name == "b" and _saved(graph, "MulBackward0", "other").name == "x"
    assert _saved(graph, "ExpBackward0", "result").nbytes == 12 == b.nbytes
    detached = autograd_graph((x.detach() * b).sum(), names={"x": x})
    assert _saved(detached, "MulBackward0", "self").name == "x"  # detach() shares x's elements and version
    assert autograd_graph((b * x).sum()).nodes[2].saved[0].name is None  # no names, no match
    other_shape = autograd_graph((b.view(3, 1) * x).sum(), names={"b": b})
    assert _saved(other_shape, "MulBackward0", "self").name is None  # same storage, another shape: not b


def test_a_stale_saved_tensor_names_the_write_that_changed_it():
    a = torch.tensor([0.5, 1.0, 2.0], requires_grad=True)
    b = a.exp()
    b.mul_(2)
    graph = autograd_graph(b.sum(), names={"a": a, "b": b})
    saved = _saved(graph, "ExpBackward0", "result")
    assert saved.stale and saved.name == "b" and saved.current_version == b._version == 1
    assert saved.edited_by_name == "MulBackward0" == graph.nodes[saved.edited_by].name
    assert saved.edited_by == graph.find("MulBackward0")[0].id  # b.grad_fn: the node mul_ made
    # a write outside the graph drawn (h.add_ after y = h * w): named, its node not in the graph
    h = a.sin()
    y = h * a
    h.add_(3)
    later = _saved(autograd_graph(y, names={"h": h}), "MulBackward0", "self")
    assert later.name == "h" and later.edited_by_name == "AddBackward0" and later.edited_by is None
    # a write under no_grad leaves grad_fn alone: the write is not known
    c = a.exp()
    with torch.no_grad():
        c.mul_(2)
    quiet = _saved(autograd_graph(c.sum(), names={"c": c}), "ExpBackward0", "result")
    assert quiet.stale and quiet.name == "c" and quiet.edited_by_name is None and quiet.edited_by is None
    # a write through a view: CopySlices
    d = a.exp()
    d[0].mul_(2)
    through_view = _saved(autograd_graph(d.sum(), names={"d": d}), "ExpBackward0", "result")
    assert through_view.edited_by_name.endswith("CopySlices")  # as the graph names that node


@pytest.mark.parametrize("pieces", [lambda x: x.split(2), lambda x: x.unbind(), lambda x: x.chunk(2)])
def test_a_stale_saved_piece_of_a_multi_output_view_is_named_as_unchecked(pieces):
    x = torch.randn(4, requires_grad=True) * 1
    p = pieces(x)[0]
    y = p.sin() + 1
    x.add_(1)  # the base moves on; torch then refuses the saved piece with its own error
    found = inplace_hazards(y)
    with pytest.raises(RuntimeError, match="is a view and its base"):
        y.sum().backward()
    assert list(found) == [] and any("SinBackward0's self" in text for text in found.unseen)
    fresh = torch.randn(4, requires_grad=True) * 1
    assert inplace_hazards(pieces(fresh)[0].sin()).unseen == ()  # untouched base: nothing to name
