"""A module using F.relu(inplace=True) on a conv output, and index assignment into a new tensor."""
import torch
from torch import nn


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv = nn.Conv1d(2, 3, 3)

    def forward(self, x):
        h = nn.functional.relu(self.conv(x), inplace=True)
        mask = torch.ones_like(h)
        mask[:, 0] = 0.5
        return h * mask


def run():
    torch.manual_seed(0)
    net = Net()
    net(torch.randn(2, 2, 6)).sum().backward()
    return [p.grad for p in net.parameters()]
