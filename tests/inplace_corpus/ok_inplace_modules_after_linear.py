"""nn.ReLU(inplace=True) and nn.Dropout(inplace=True) after Linear layers (whose backward does not need their
output): safe, and common in classifier heads."""
import torch
from torch import nn


def run():
    torch.manual_seed(0)
    model = nn.Sequential(
        nn.Linear(6, 8), nn.ReLU(inplace=True), nn.Linear(8, 8), nn.Dropout(0.5, inplace=True), nn.Linear(8, 2)
    )
    model(torch.randn(4, 6)).pow(2).mean().backward()
    return [p.grad for p in model.parameters()]
