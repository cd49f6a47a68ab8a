"""F.relu_(h) inside a module's forward, after tanh (whose backward needs its output)."""
import torch
import torch.nn.functional as F
from torch import nn


class Block(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(4, 4)

    def forward(self, x):
        h = torch.tanh(self.fc(x))  # SAVES
        F.relu_(h)  # CHANGES INTENDED: h = F.relu(h)
        return h


def run():
    torch.manual_seed(0)
    block = Block()
    block(torch.randn(3, 4)).sum().backward()
    return [p.grad for p in block.parameters()]
