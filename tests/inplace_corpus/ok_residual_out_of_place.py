"""The residual block with x = x + out instead of x += out."""
import torch
from torch import nn


class Residual(nn.Module):
    def __init__(self, width):
        super().__init__()
        self.fc = nn.Linear(width, width)

    def forward(self, x):
        return x + torch.relu(self.fc(x))


def run():
    torch.manual_seed(0)
    stem = nn.Linear(4, 4)
    block = Residual(4)
    block(stem(torch.randn(3, 4))).sum().backward()
    return [p.grad for p in block.parameters()] + [p.grad for p in stem.parameters()]
