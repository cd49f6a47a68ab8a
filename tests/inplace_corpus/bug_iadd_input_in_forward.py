"""x += 1 inside forward, after a Linear layer saved x for its weight gradient."""
import torch
from torch import nn


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(3, 2)

    def forward(self, x):
        y = self.fc(x)  # SAVES
        x += 1  # CHANGES INTENDED: x = x + 1
        return y * x.sum()


def run():
    torch.manual_seed(0)
    net = Net()
    net(torch.randn(4, 3)).sum().backward()
    return [p.grad for p in net.parameters()]
