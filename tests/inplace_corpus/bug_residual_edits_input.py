"""A residual block that adds into its own input: the Linear layer saved that input."""
import torch
from torch import nn


class Residual(nn.Module):
    def __init__(self, width):
        super().__init__()
        self.fc = nn.Linear(width, width)

    def forward(self, x):
        out = torch.relu(self.fc(x))  # SAVES
        x += out  # CHANGES INTENDED: x = x + out
        return x


def run():
    torch.manual_seed(0)
    stem = nn.Linear(4, 4)
    block = Residual(4)
    out = block(stem(torch.randn(3, 4)))
    out.sum().backward()
    return [p.grad for p in block.parameters()]
