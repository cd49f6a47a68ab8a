"""ReLU(inplace=True) inside nn.Sequential: both the save and the change happen on the model call."""
import torch
from torch import nn


def run():
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(3, 4), nn.Sigmoid(), nn.ReLU(inplace=True), nn.Linear(4, 1))  # INTENDED: model = nn.Sequential(nn.Linear(3, 4), nn.Sigmoid(), nn.ReLU(), nn.Linear(4, 1))
    out = model(torch.randn(5, 3))  # SAVES CHANGES
    out.sum().backward()
    return [p.grad for p in model.parameters()]
