"""Small models and example graphs shared by the tests and the benchmarks.

tests/ is on pytest's pythonpath; a benchmark adds it to ``sys.path``.
"""

from __future__ import annotations

import torch
from torch import nn

from tutorial_lib import Graph, GraphNode


class Block(nn.Module):
    """x + fc2(relu(fc1(x))): 10 backward-graph nodes with its parameters."""

    def __init__(self, width: int):
        super().__init__()
        self.fc1 = nn.Linear(width, width)
        self.fc2 = nn.Linear(width, width)

    def forward(self, x):
        return x + self.fc2(torch.relu(self.fc1(x)))


class ResidualMLP(nn.Module):
    """stem -> ReLU -> ``depth`` residual blocks -> head."""

    def __init__(self, depth: int, width: int = 4, inputs: int = 3):
        super().__init__()
        self.stem = nn.Linear(inputs, width)
        self.blocks = nn.ModuleList(Block(width) for _ in range(depth))
        self.head = nn.Linear(width, 1)

    def forward(self, x):
        h = torch.relu(self.stem(x))
        for block in self.blocks:
            h = block(h)
        return self.head(h)


def residual(depth: int, width: int = 4, inputs: int = 3, batch: int = 5):
    """(model, loss): a seeded ``ResidualMLP`` and the mean square of its output; 12 + 10 * depth graph nodes."""
    torch.manual_seed(0)
    model = ResidualMLP(depth, width, inputs)
    return model, model(torch.randn(batch, inputs)).pow(2).mean()


def seed_example():
    """(z, names): z = log(x1 * x2) * sin(x2) after a backward that kept its graph (the seed articles' example)."""
    x1 = torch.tensor(2.0, requires_grad=True)
    x2 = torch.tensor(3.0, requires_grad=True)
    z = torch.log(x1 * x2) * torch.sin(x2)
    z.backward(retain_graph=True)
    return z, {"x1": x1, "x2": x2}


def stale_exp_example():
    """(y, names): exp saved its result, which ``mul_`` then changed: backward raises when it reaches ExpBackward0."""
    x = torch.tensor([1.0, 2.0, 3.0], requires_grad=True)
    a = x.exp()
    a.mul_(2)
    y = (a * x).sum()
    return y, {"x": x}


class SavesW(torch.autograd.Function):
    """``SavesW.apply(a, w)``: returns ``a * 1`` and saves ``w`` (any dtype, no grad), which its backward reads, so
    changing ``w`` in place makes backward raise torch's version error naming ``w``'s type."""

    @staticmethod
    def forward(ctx, a, w):
        ctx.save_for_backward(w)
        return a * 1

    @staticmethod
    def backward(ctx, grad):
        ctx.saved_tensors  # noqa: B018 - reading them is what raises
        return grad, None


def random_graph(data, max_nodes=14) -> Graph:
    """A random DAG shaped like a backward graph (hypothesis ``data``): node 0 is the root, every other node has
    a parent before it."""
    from hypothesis import strategies as st  # tests only: the benchmarks import this module too

    n = data.draw(st.integers(1, max_nodes))
    edges = []
    for v in range(1, n):
        parents = data.draw(st.sets(st.integers(0, v - 1), min_size=1, max_size=min(3, v)))
        edges.extend((p, v) for p in sorted(parents))
    names = ["MulBackward0", "AddBackward0", "ExpBackward0", "SinBackward0"]
    nodes = tuple(
        GraphNode(i, names[data.draw(st.integers(0, 3))], "backward", f"node{i}" + "x" * data.draw(st.integers(0, 12)))
        for i in range(n)
    )
    return Graph(nodes, tuple(edges), 0, n, False)
