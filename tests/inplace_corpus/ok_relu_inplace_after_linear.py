"""ReLU(inplace=True) after a Linear layer is safe: addmm does not save its output."""
import torch
from torch import nn


def run():
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(3, 4), nn.ReLU(inplace=True), nn.Linear(4, 1))
    model(torch.randn(5, 3)).sum().backward()
    return [p.grad for p in model.parameters()]
