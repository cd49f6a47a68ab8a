"""An Xception-style block: the skip path's 1x1 convolution saves the block input, then the residual path starts
with nn.ReLU(inplace=True) on that same input."""
import torch
from torch import nn


class Block(nn.Module):
    def __init__(self, channels):
        super().__init__()
        self.skip = nn.Conv2d(channels, channels, 1)
        self.rep = nn.Sequential(
            nn.ReLU(inplace=True),  # INTENDED: nn.ReLU(),
            nn.Conv2d(channels, channels, 3, padding=1),
        )

    def forward(self, x):
        skip = self.skip(x)  # SAVES
        return self.rep(x) + skip  # CHANGES


def run():
    torch.manual_seed(0)
    stem = nn.Conv2d(1, 3, 3, padding=1)
    block = Block(3)
    block(stem(torch.randn(1, 1, 6, 6))).sum().backward()
    return [p.grad for p in block.parameters()] + [p.grad for p in stem.parameters()]
