"""A torch.compile'd function (eager backend) whose result is then changed in place."""
import torch


@torch.compile(backend="eager")
def squash(t):
    return torch.sigmoid(t) * 2


def run():
    torch.manual_seed(0)
    a = torch.randn(5, requires_grad=True)
    s = torch.exp(squash(a))  # SAVES
    s.add_(1)  # CHANGES INTENDED: s = s.add(1)
    s.sum().backward()
    return [a.grad]
