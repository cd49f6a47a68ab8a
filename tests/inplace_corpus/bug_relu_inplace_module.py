"""The seed article's case: nn.ReLU(inplace=True) right after a sigmoid, whose backward needs its output."""
import torch
from torch import nn


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(3, 4)
        self.act = nn.ReLU(inplace=True)  # INTENDED: self.act = nn.ReLU()

    def forward(self, x):
        h = torch.sigmoid(self.fc(x))  # SAVES
        return self.act(h)  # CHANGES


def run():
    torch.manual_seed(0)
    net = Net()
    out = net(torch.randn(5, 3))
    out.sum().backward()
    return [p.grad for p in net.parameters()]


if __name__ == "__main__":
    run()
