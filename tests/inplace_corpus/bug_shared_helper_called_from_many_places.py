"""One ConvBlock helper used at four places of a network: the saving line is inside the helper, so only the call
chain tells which of the four calls saved the stale tensor."""
import torch
from torch import nn


class ConvBlock(nn.Module):
    def __init__(self, channels):
        super().__init__()
        self.conv = nn.Conv2d(channels, channels, 3, padding=1)

    def forward(self, x):
        return torch.sigmoid(self.conv(x))  # SAVES


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.blocks = nn.ModuleList([ConvBlock(2) for _ in range(4)])

    def forward(self, x):
        a = self.blocks[0](x)
        b = self.blocks[1](a)
        c = self.blocks[2](b)  # CHAIN
        c.mul_(0.5)  # CHANGES INTENDED: c = c * 0.5
        return self.blocks[3](c)


def run():
    torch.manual_seed(0)
    net = Net()
    net(torch.randn(1, 2, 5, 5)).sum().backward()
    return [p.grad for p in net.parameters()]
