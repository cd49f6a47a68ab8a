"""A torch.compile'd function (eager backend) in a correct program."""
import torch


@torch.compile(backend="eager")
def squash(t):
    return torch.sigmoid(t) * 2


def run():
    torch.manual_seed(0)
    a = torch.randn(5, requires_grad=True)
    s = torch.exp(squash(a))
    s.sum().backward()
    return [a.grad]
