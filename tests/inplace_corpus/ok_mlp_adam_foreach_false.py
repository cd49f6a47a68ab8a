"""An MLP trained three steps with Adam(foreach=False) and zero_grad(set_to_none=False)."""
import torch
from torch import nn


def run():
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(4, 8), nn.ReLU(), nn.Linear(8, 1))
    optimizer = torch.optim.Adam(model.parameters(), lr=0.01, foreach=False)
    for _ in range(3):
        optimizer.zero_grad(set_to_none=False)
        model(torch.randn(6, 4)).pow(2).mean().backward()
        optimizer.step()
    return [p.grad for p in model.parameters()] + list(model.parameters())
