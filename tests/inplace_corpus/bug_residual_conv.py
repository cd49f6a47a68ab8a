"""A convolutional residual block that edits its input in place (x += ...)."""
import torch
from torch import nn


class Block(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv = nn.Conv2d(2, 2, 3, padding=1)

    def forward(self, x):
        y = self.conv(x)  # SAVES
        x += torch.relu(y)  # CHANGES INTENDED: x = x + torch.relu(y)
        return x


def run():
    torch.manual_seed(0)
    stem = nn.Conv2d(1, 2, 1)
    block = Block()
    block(stem(torch.randn(1, 1, 5, 5))).sum().backward()
    return [p.grad for p in block.parameters()]
