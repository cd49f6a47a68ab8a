"""A mixture-of-experts router that zeroes small gate values in place after the softmax (whose backward needs
its output)."""
import torch
from torch import nn


def run():
    torch.manual_seed(0)
    router = nn.Linear(4, 3)
    experts = nn.ModuleList([nn.Linear(4, 4) for _ in range(3)])
    x = torch.randn(5, 4)
    gates = torch.softmax(router(x), dim=-1)  # SAVES
    gates.masked_fill_(gates < 0.2, 0.0)  # CHANGES INTENDED: gates = gates.masked_fill(gates < 0.2, 0.0)
    out = sum(gates[:, i : i + 1] * expert(x) for i, expert in enumerate(experts))
    out.pow(2).mean().backward()
    return [p.grad for p in router.parameters()]
